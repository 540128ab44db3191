"""One forward pass of a micro-batch, the way training and every evaluation run it.

Move the collated batch to the device, then under the run's autocast: the task's ``forward`` and
its summed loss (``TaskData.loss_sum``). Train mode or eval mode, gradients or ``no_grad``, and
what is read back afterwards (targets, correct predictions) stay with the caller. Reads no value
back from the device, so it also runs on fake tensors (``pilot.estimate``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, NamedTuple

import torch

from pilot.data.task import Batch, TaskData, move_to


class ForwardPass(NamedTuple):
    """Unpack it (``batch, output, loss_sum = ...``) to keep only what the caller needs alive."""

    batch: Batch  # the micro-batch, on the device
    output: Any  # what ``task.forward`` returned
    loss_sum: torch.Tensor  # ``task.loss_sum(output, batch)``: summed over the batch's targets


def forward_loss(
    task: TaskData,
    model: torch.nn.Module,
    batch: Batch,
    device: torch.device,
    autocast: Callable[[], Any] = nullcontext,
) -> ForwardPass:
    """``batch`` (from ``task.collate``) on ``device``, forward and summed loss under ``autocast``."""
    batch = move_to(batch, device)
    with autocast():
        output = task.forward(model, batch)
        loss_sum = task.loss_sum(output, batch)
    return ForwardPass(batch, output, loss_sum)
