"""A batch key given to the model under another key's name: ``forward`` passing ``batch["token_type_ids"]``
as the model's ``attention_mask`` (keywords swapped, or arguments given by position in another order than
the model's ``forward`` takes them), or ``labels=batch["input_ids"]`` where the batch holds labels of its own
(the prompt and padding masking then never reach the loss). Seen on the arguments the model receives (a
forward pre-hook on the model the task's ``forward`` calls), matched by value with the batch's tensors: an
argument named like a batch key that holds, exactly, another key's different tensor. An argument built from
the batch (a cast, a 4-D mask) matches no key and is not judged."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

EXAMPLES = 4  # collated as one micro-batch


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.is_floating_point() != b.is_floating_point():
        return False
    return bool((a.detach().cpu().double() == b.detach().cpu().double()).all())


def _received(task: TaskData, model: torch.nn.Module, batch: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the model's first call, by the names its ``forward`` gives them."""
    received: dict[str, Any] = {}
    signature = inspect.signature(model.forward)

    def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if not received:
            try:
                received.update(signature.bind_partial(*args, **kwargs).arguments)
            except TypeError:
                received["<unbound>"] = None

    handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            task.forward(model, batch)
    finally:
        handle.remove()
        model.train(was_training)
    return {name: value for name, value in received.items() if torch.is_tensor(value)}


def argument_findings(
    task: TaskData, model: torch.nn.Module, train: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    if len(train) < 2:
        return [], {}
    batch = task.collate(train[:EXAMPLES])
    keys = {k: v for k, v in batch.items() if torch.is_tensor(v) and k != "index"}
    received = _received(task, model, batch)
    swapped = []
    for name, value in received.items():
        if name not in keys or _same(value, keys[name]):
            continue
        source = next((k for k, v in keys.items() if k != name and _same(value, v)), None)
        if source is not None and not _same(keys[source], keys[name]):  # two equal keys: cannot tell which
            swapped.append((source, name))
    details = {"arguments_by_batch_key": sorted(n for n in received if n in keys), "swapped": swapped}
    if not swapped:
        return _encoder_mask_as_decoders(received, keys), details
    said = "; ".join(f"batch[{source!r}] as its argument {name!r}" for source, name in swapped)
    first_source, first_name = swapped[0]
    return [
        Finding(
            f"forward gives the model {said}, while the batch holds a different {first_name!r} of its own: "
            f"the model reads {first_source!r} where it expects {first_name!r} (keywords swapped, or arguments "
            "given by position in another order than the model's forward takes them). Fix: pass each by "
            f"keyword, {first_name}=batch[{first_name!r}]"
        )
    ], details


def _encoder_mask_as_decoders(received: dict[str, Any], keys: dict[str, Any]) -> list[Finding]:
    """``decoder_attention_mask=batch["attention_mask"]``: the source's padding given as the decoder's (one
    common width, so no shape error), hiding real target positions (labels not -100) wherever the source
    is shorter than the target."""
    given, source, labels = received.get("decoder_attention_mask"), keys.get("attention_mask"), keys.get("labels")
    if given is None or "decoder_attention_mask" in keys or source is None or not _same(given, source):
        return []
    if labels is None or labels.shape != given.shape:
        return []
    hidden = int(((labels != IGNORE_INDEX) & (given == 0)).sum())
    if not hidden:
        return []
    return [
        Finding(
            f"forward gives the model batch['attention_mask'] (the source's padding) as its decoder_attention_mask: "
            f"{hidden} real target position(s) (labels not {IGNORE_INDEX}) of this micro-batch lie where that mask is "
            "0, so the decoder cannot attend to its own earlier target tokens past the source's length. Fix: "
            f"decoder_attention_mask = (labels != {IGNORE_INDEX}) shifted as the decoder's inputs are (or leave it "
            "out: the model builds its causal mask itself)"
        )
    ]
