"""The lowest loss ``loss_sum`` can give on a batch, whatever the model: its floor.

A loss with label smoothing (or soft targets, or a term that does not depend on the output) cannot
reach 0: with smoothing 0.1 over 3 classes the best any output can do is about 0.29 per target. The
tiny-subset check judges how far the loss fell towards its floor; against 0 instead, a correct task
with label smoothing was a warning ("fell less than declared").

Measured, not derived from the loss's name: the output's logits are replaced by free tensors (the
rest of the output kept) and ``loss_sum`` itself is minimised over them by Adam, from the model's own
logits. No model, no context, no data ambiguity: each target position gets its own logits, so this
is the loss's own floor (the subset's ambiguity is the other floor, ``SubsetScorer.loss_floor``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch

from pilot.checks.loss_probe import float_leaves
from pilot.data.task import Batch, TaskData, logits_of

STEPS, LEARNING_RATE = 200, 0.5  # Adam on free logits: margins of ~50 logits reachable, far past any floor


def with_logits(output: Any, logits: torch.Tensor) -> Any:
    """``output`` with its logits (``logits_of``) replaced, in the same form: a tensor, a tuple or list
    (first element), a dict or transformers' ``ModelOutput``, an object with ``logits``."""
    if torch.is_tensor(output):
        return logits
    if isinstance(output, (tuple, list)):
        return type(output)([logits, *output[1:]])
    replaced = copy.copy(output)
    if isinstance(replaced, Mapping):
        replaced["logits"] = logits  # ModelOutput sets the attribute too
    else:
        replaced.logits = logits
    return replaced


# a bound on the logits: (free logits from bounded ones, bounded ones from free ones)
_HELD = {
    True: (lambda bounded: torch.logit(bounded.clamp(1e-4, 1 - 1e-4)), torch.sigmoid),
    "nonnegative": (lambda bounded: bounded.clamp(min=1e-4).expm1().log(), torch.nn.functional.softplus),
}


def _heads(output: Any) -> tuple[Any, list[torch.Tensor]] | None:
    """A tuple or list output holding several tensors of scores (two classifiers' logits): the output with
    each floating tensor a leaf, and the score tensors among them; None otherwise."""
    if not isinstance(output, (tuple, list)):
        return None
    leafed, leaves = float_leaves(output)
    scores = [leaf for leaf in leaves if leaf.dim() >= 2 and leaf.shape[-1] > 1]
    return (leafed, scores) if len(scores) > 1 else None


def evened(output: Any) -> Any:
    """``output`` with every logit 0: its logits (``logits_of``), or each head's scores (``_heads``)."""
    heads = _heads(output)
    if heads is None:
        return with_logits(output, torch.zeros_like(logits_of(output)))
    with torch.no_grad():
        for scores in heads[1]:
            scores.zero_()
    return heads[0]


def _freed(output: Any, held: tuple | None) -> tuple[list[torch.Tensor], Callable[[], Any]]:
    """The tensors a floor steps, and the output made of them: every head's scores (``_heads``, unbounded
    only: the loss's floor is over all of them), else the logits, free or ``held`` in a bound."""
    heads = None if held else _heads(output)
    if heads is not None:
        leafed, scores = heads
        return scores, lambda: leafed
    start = logits_of(output).detach().float()
    free = (held[0](start) if held else start.clone()).requires_grad_(True)
    return [free], lambda: with_logits(output, held[1](free) if held else free)


def loss_floor(
    task: TaskData, outputs: list[tuple[Any, Batch]], bounded: bool | str = False, below: float | None = None
) -> float | None:
    """The lowest mean loss per target ``task.loss_sum`` reaches over free logits on these (output,
    batch) pairs (outputs on the batches' device); None when the logits cannot be replaced or the
    loss does not depend on them. ``bounded``: over logits held in [0, 1] (a sigmoid of free ones),
    what a model whose forward ends in a sigmoid or softmax can give the loss; ``"nonnegative"``: over
    logits held at 0 or above (a softplus of free ones), what one ending in a ReLU can give. ``below``: a batch
    stops once its loss per target is under it (what the caller counts as no floor: a 200,000-token
    vocabulary's logits took minutes of steps that could only go lower)."""
    total = targets = 0.0
    for output, batch in outputs:
        count = float(task.target_count(batch))
        held = _HELD.get(bounded, _HELD[True]) if bounded else None
        free_ones, freed = _freed(output, held)
        optimizer = torch.optim.Adam(free_ones, lr=LEARNING_RATE)
        lowest = float("inf")
        for _ in range(STEPS):
            optimizer.zero_grad(set_to_none=True)
            with torch.enable_grad():
                loss = task.loss_sum(freed(), batch)
            if not torch.is_tensor(loss) or not loss.requires_grad:
                return None
            lowest = min(lowest, float(loss.detach()))
            if below is not None and lowest <= below * count:
                break
            loss.backward()
            optimizer.step()
        total += lowest
        targets += count
    return total / targets if targets else None
