"""Part of the tiny subset's reasons: frozen tensors (``requires_grad=False``) that the loss's gradient would reach.

A tensor frozen on purpose holds trained weights (a pretrained backbone, GloVe vectors) and the rest learns on
top of them. One frozen by a default holds whatever it was built with: ``nn.Embedding.from_pretrained(matrix)``
freezes its table (``freeze=True``) even when the matrix is a random init copied from a notebook, and the model
then learns on fixed random features; the tiny subset fails, every other check passes, and nothing said why.
Whether a frozen tensor's values were ever trained cannot be read from them, so this is named only as a reason
of a tiny subset that was not learnt (a frozen tensor that holds trained weights does not stop a handful of
examples from being learnt), and only for tensors the gradient would reach: each frozen tensor is made
trainable for one backward of ``loss_sum`` on one batch, then frozen again. A tensor ``forward`` runs under
``torch.no_grad()`` (a frozen feature extractor) gets no gradient there and is not named.
"""

from __future__ import annotations

import torch

from pilot.data.task import Batch, TaskData
from pilot.engine.forward import forward_loss
from pilot.models.adapter import is_adapted

SHOWN = 4  # tensor names shown
FROZEN_ON_PATH = "lie on the loss's path"  # this hint's words: a possible cause, not the only one said


def frozen_on_the_path(task: TaskData, model: torch.nn.Module, batch: Batch, device: torch.device) -> str:
    """The frozen tensors the loss's gradient would reach, named with the fix ("" when there are none, when
    nothing trains at all — the contract says that — or under an adapter, whose base is frozen by design)."""
    frozen = [(name, p) for name, p in model.named_parameters() if not p.requires_grad and p.is_floating_point()]
    if not frozen or is_adapted(model) or not any(p.requires_grad for p in model.parameters()):
        return ""
    model.zero_grad(set_to_none=True)
    try:
        for _, parameter in frozen:
            parameter.requires_grad_(True)
        loss_sum = forward_loss(task, model, batch, device).loss_sum
        if torch.is_tensor(loss_sum) and loss_sum.requires_grad:
            loss_sum.backward()
        reached = [name for name, p in frozen if p.grad is not None and bool(p.grad.any())]
    except Exception:  # noqa: BLE001 - a reason is a courtesy: the check's own verdict already stands
        reached = []
    finally:
        for _, parameter in frozen:
            parameter.requires_grad_(False)
            parameter.grad = None
        model.zero_grad(set_to_none=True)
    return _said(model, reached) if reached else ""


def _said(model: torch.nn.Module, reached: list[str]) -> str:
    owners = dict(model.named_modules())
    tables = [name for name in reached if isinstance(owners.get(name.rpartition(".")[0]), torch.nn.Embedding)]
    shown = ", ".join(reached[:SHOWN]) + (f" and {len(reached) - SHOWN} more" if len(reached) > SHOWN else "")
    table = (
        f" `{tables[0]}` is an nn.Embedding's table: nn.Embedding.from_pretrained(matrix) freezes it by default "
        "(freeze=True), also when the matrix is a random init."
        if tables
        else ""
    )
    return (
        f"{len(reached)} frozen tensor(s) (requires_grad=False) {FROZEN_ON_PATH} ({shown}): its gradient would "
        f"reach them, yet they stay as built.{table} Frozen on purpose over trained weights (loaded vectors, a "
        "pretrained backbone), they leave the rest to learn; frozen at a random init, the model learns on fixed "
        "random features. Fix: train them (nn.Embedding.from_pretrained(matrix, freeze=False), or "
        "requires_grad_(True)), or load trained weights into them."
    )
