"""The gradients an earlier micro-batch leaves, held through the fake estimate's single forward/backward.

The fake estimate runs an update's worst micro-batch alone (``fake_tensor._update_phase``): the gradients the
micro-batches before it would have left are given beforehand, as zeros, to every trainable parameter; one
the backward then never writes (an unused head, a body run under no_grad) is released, as it never holds one
in the run.
"""

from __future__ import annotations

from typing import Any

import torch


def hold_gradients(model: torch.nn.Module, tracker: Any) -> tuple[list[tuple[torch.Tensor, Any]], set[int]]:
    """Give every trained parameter the gradient an earlier micro-batch would have left (zeros: the
    same shape, dtype and device; on fake tensors no values exist anyway), counted as gradients. Returns
    each held parameter with a hook that notes whether the backward then writes its gradient."""
    held = []
    for param in model.parameters():
        if param.requires_grad and param.grad is None:
            param.grad = torch.zeros_like(param)
            held.append(param)
    tracker.track_external(model)
    written: set[int] = set()
    return [(param, param.register_post_accumulate_grad_hook(lambda p: written.add(id(p)))) for param in held], written


def release_unwritten(held: list, written: set[int], fb: dict[str, int], release: bool) -> None:
    """A parameter that requires a gradient but gets none (an unused head, a body run under no_grad) never
    holds one in the run: no micro-batch leaves it a gradient, and the optimizer keeps no state for it. Its
    held zeros were there through the whole forward/backward, so the peak less their bytes is the peak
    without them (exact); released before the step, which then allocates no state for it either."""
    for param, hook in held:
        hook.remove()
        if release and id(param) not in written and param.grad is not None:
            fb["gradients"] -= param.grad.nbytes
            fb["total"] -= param.grad.nbytes
            param.grad = None
