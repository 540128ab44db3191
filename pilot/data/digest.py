"""A fingerprint of what a task encodes, example by example and key by key: two processes that build
the same task from the same config must encode the same examples. One that does not (class ids from
``set()`` order, which changes with PYTHONHASHSEED; an unseeded generator in ``make_task``) trains
another run after a resume, and the resume check would otherwise only see "the loss differs"."""

from __future__ import annotations

import hashlib
from typing import Any

import torch


def _digest(value: Any) -> str:
    if torch.is_tensor(value):
        tensor = value.detach().cpu().contiguous()
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        return hashlib.sha1(f"{tensor.dtype}{tuple(tensor.shape)}".encode() + raw).hexdigest()[:16]
    return hashlib.sha1(repr(value).encode()).hexdigest()[:16]


def batch_digests(pairs: list[tuple[dict[str, Any], float]]) -> dict[str, str]:
    """Per key of an update's collated micro-batches (``(batch, weight)`` pairs): a digest of its values
    in every micro-batch, so two updates that collate other tensors from the same examples are told apart."""
    keys = sorted({key for batch, _ in pairs for key in batch})
    return {
        key: hashlib.sha1("".join(_digest(batch.get(key)) for batch, _ in pairs).encode()).hexdigest()[:16]
        for key in keys
    }


def encoded_digests(items: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Per encoded example (a trainer's ``train_items``): key -> a digest of its value."""
    return [{key: _digest(value) for key, value in item.items()} for item in items]


def first_difference(here: list[dict[str, str]], there: list[dict[str, str]], split: str = "train") -> str | None:
    """Where two processes' encodings of a split first disagree, said for the user; None if nowhere."""
    if len(here) != len(there):
        return f"the {split} split holds {len(there)} examples there, {len(here)} here"
    for position, (mine, theirs) in enumerate(zip(here, there)):
        keys = sorted(key for key in mine.keys() | theirs.keys() if mine.get(key) != theirs.get(key))
        if keys:
            return f"{split} example {position} differs in {', '.join(keys)}"
    return None
