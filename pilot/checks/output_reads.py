"""Which of a model output's tensors ``loss_sum`` trains and which ``predict`` reads.

A model that returns several tensors (``{"logits": ..., "aux_logits": ...}``, a tuple, transformers'
``ModelOutput``) lets a task train one and score another: a loss that keeps only an auxiliary head
while ``predict`` reads the final one trains a head that is never scored, and the final head is never
trained. Measured on one batch, by name: the tensors ``loss_sum``'s gradient reaches (non-zero), and
the tensors whose replacement by other values changes what ``predict`` returns.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch

from pilot.data.task import Batch, TaskData


def named_tensors(output: Any) -> dict[str, torch.Tensor]:
    """The output's floating-point tensors by name (a mapping's keys, a sequence's positions)."""
    if isinstance(output, Mapping):
        items = [(str(k), v) for k, v in output.items()]
    elif isinstance(output, (tuple, list)):
        items = [(str(i), v) for i, v in enumerate(output)]
    else:
        return {}
    return {k: v for k, v in items if torch.is_tensor(v) and v.is_floating_point()}


def rebuilt(output: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """``output`` in its own form with these tensors in place of its own."""
    if isinstance(output, (tuple, list)):
        values = [tensors.get(str(i), v) for i, v in enumerate(output)]
        return type(output)(values)
    rebuilt = copy.copy(output)
    for key, value in tensors.items():
        rebuilt[key] = value
    return rebuilt


def output_reads(task: TaskData, output: Any, batch: Batch) -> tuple[list[str], list[str]] | None:
    """(tensors loss_sum trains, tensors predict reads), by name; None for an output of one tensor."""
    named = named_tensors(output)
    if len(named) < 2:
        return None
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in named.items()}
    with torch.enable_grad():
        loss = task.loss_sum(rebuilt(output, leaves), batch)
    if not torch.is_tensor(loss) or not loss.requires_grad:
        return None
    grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    trained = [k for k, g in zip(leaves, grads) if g is not None and bool(g.abs().sum() > 0)]
    with torch.no_grad():
        plain = {k: v.detach() for k, v in named.items()}
        base = task.predict(rebuilt(output, plain), batch)
        generator = torch.Generator(device=base.device).manual_seed(0)
        read = []
        for key, value in plain.items():
            other = torch.randn(value.shape, generator=generator, device=value.device, dtype=value.dtype)
            changed = task.predict(rebuilt(output, {**plain, key: other * (value.std() + 1)}), batch)
            if not torch.equal(changed, base):
                read.append(key)
    return trained, read


def output_hint(task: TaskData, output: Any, batch: Batch) -> str:
    """A sentence when loss_sum and predict use different tensors of the output, else ""."""
    try:
        reads = output_reads(task, output, batch)
    except Exception:  # noqa: BLE001 - a hint is a courtesy: the check's verdict stands without it
        return ""
    if reads is None or not reads[0] or not reads[1] or set(reads[0]) & set(reads[1]):
        return ""
    named = named_tensors(output)
    if all(any(computed_from(named[r], named[t]) for t in reads[0]) for r in reads[1]):
        return ""  # what predict reads is computed from what the loss trains (a cosine of two trained embeddings)
    trained, read = (", ".join(repr(k) for k in keys) for keys in reads)
    return (
        f"loss_sum trains the output's {trained}, and predict reads {read}: what is scored is never trained "
        "(and what is trained never scored). Fix: train what predict reads (add its loss term), or predict from "
        "what loss_sum trains."
    )


def computed_from(result: torch.Tensor, source: torch.Tensor, most: int = 100_000) -> bool:
    """Whether autograd's graph of ``result`` (an output computed with gradient) passes through ``source``'s
    node: ``result`` is computed from ``source``. A walk of the graph's nodes, no backward (``most``: nodes
    visited at most)."""
    target = source.grad_fn
    if target is None or result.grad_fn is None:
        return False
    seen, stack = set(), [result.grad_fn]
    while stack and len(seen) < most:
        node = stack.pop()
        if node is target:
            return True
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return False
