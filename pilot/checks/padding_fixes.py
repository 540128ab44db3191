"""What a padding finding tells the user to fix (``pilot.checks.padding``): pack a recurrent layer; pass
the attention mask forward leaves out of the model's call (measured on that call: no argument is a mask);
position ids with left padding; a mask that is passed and does not mask."""

from __future__ import annotations

from typing import Any

import torch

from pilot.data.task import TaskData

RECURRENT_FIX = (
    "The model holds a recurrent layer (nn.RNN, nn.GRU, nn.LSTM), which runs over every column: over the padded "
    "steps before the real tokens with left padding, and after them into its last state with right padding; an "
    "attention mask does not reach it. Fix: pack the sequences (nn.utils.rnn.pack_padded_sequence with each row's "
    "length, enforce_sorted=False) or pad on the right and take each row's output at its last real position; an attention layer beside it needs "
    "the mask too"
)


def mask_fix(batch: dict[str, Any], real_row: torch.Tensor, unread: bool = False) -> str:
    """The fix, by what the batch holds and forward passes: a mask forward leaves out of the model's call
    (``unread``, ``mask_unread``), no mask to pass, a left-padded row without position ids, or a mask that
    may be passed and not mask."""
    left = bool(real_row.numel()) and not bool(real_row[0]) and bool(real_row[-1])
    if unread:
        return MASK_UNREAD + (" (and, padded on the left, position ids that start at the first real token)" * left)
    if left and torch.is_tensor(batch.get("attention_mask")) and "position_ids" not in batch:
        return (
            "The row is padded on the left and the batch holds no position_ids: a model that numbers positions "
            "from the first column (GPT-2 and most transformers models given no position_ids) gives the real "
            "tokens other positions than alone. Fix: position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0) "
            "passed to the model (or right padding); and check that attention_mask reaches the model and masks"
        )
    if torch.is_tensor(batch.get("attention_mask")):
        return (
            "Fix: pass attention_mask to the model in forward, and check that it masks: a 0/1 mask given to "
            "scaled_dot_product_attention as a float is added to the scores, it hides nothing (pass a bool "
            "mask, True where attended; nn.MultiheadAttention's key_padding_mask is True where IGNORED); a mean "
            "pooled over positions sums the real ones and divides by their count (attention_mask.sum(1)), not by "
            "the padded width; with left padding, position ids that start at the first real token"
        )
    return (
        "Fix: collate an attention_mask and pass it to the model in forward (and, with left padding, position "
        "ids that start at the first real token)"
    )


def mask_unread(task: TaskData, model: torch.nn.Module, batch: dict[str, Any]) -> bool:
    """Whether forward calls the model with no mask at all (no bool tensor, none of 0/1 values, no additive mask
    of 0 and large negatives among its arguments) for a batch that holds an attention_mask: measured on the
    call itself, so a mask passed under another name, inverted or made additive counts as passed."""
    mask = batch.get("attention_mask")
    if not torch.is_tensor(mask) or bool(mask.bool().all()):
        return False
    seen: list[list[torch.Tensor]] = []

    def capture(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        seen.append([v for v in (*args, *kwargs.values()) if torch.is_tensor(v)])

    handle = model.register_forward_pre_hook(capture, with_kwargs=True)
    try:
        with torch.no_grad():
            task.forward(model, batch)
    except Exception:  # noqa: BLE001 - a forward that fails here is judged elsewhere: nothing said of it
        return False
    finally:
        handle.remove()
    return bool(seen) and not any(_mask_like(tensor) for tensor in seen[0])


def _mask_like(tensor: torch.Tensor) -> bool:
    if tensor.dtype == torch.bool:
        return True
    values = torch.unique(tensor.detach().float()) if tensor.numel() else tensor.float()
    return len(values) <= 2 and all(v in (0.0, 1.0) or v <= -1e4 for v in values.tolist())


MASK_UNREAD = (
    "forward calls the model with no attention mask (none of its arguments is a mask: the batch's attention_mask "
    "does not reach it), so the real tokens attend to the padding. Fix: pass attention_mask=batch['attention_mask'] "
    "to the model in forward"
)
