"""Shared tools of the checks that look at what reaches the loss.

- ``micro_batches``: collate a split as training does, in consecutive micro-batches;
- ``padding_mask`` / ``real_mask``: the real positions of a batch; ``counted_label_mask`` and
  ``prediction_offset``: which labels the loss counts and which input position each predicts,
  under the task's declared convention (``TaskData.convention``, ``labels_shifted``);
- ``sub_batch``: the rows of a batch as a batch of their own (every per-example tensor sliced);
- ``output_gradient``: back-propagate ``loss_sum`` to the model's output made a leaf, so the
  gradient says which class each position is trained towards (the one with negative gradient);
- ``spans``: positions written compactly ("3-9, 12").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, Batch, TaskData


def micro_batches(task: TaskData, items: Sequence[dict[str, Any]], micro_batch: int) -> Iterator[tuple[int, Batch]]:
    """(first item's position, collated batch) for consecutive micro-batches of ``items``."""
    size = max(1, int(micro_batch))
    for start in range(0, len(items), size):
        yield start, task.collate(list(items[start : start + size]))


def batch_size(batch: Batch) -> int:
    return int(len(batch["index"])) if "index" in batch else int(batch["labels"].shape[0])


def row_items(batch: Batch, chunk: Sequence[dict[str, Any]]) -> list[int]:
    """Which item of ``chunk`` each row of its collated ``batch`` is: by the ``index`` collate gives each
    row (a collate may reorder rows, sorting them by length), else in order. The order alone where the
    indices are not a reordering of the chunk's own."""
    in_order = list(range(len(chunk)))
    indices = batch.get("index")
    if not torch.is_tensor(indices) or indices.dim() != 1 or len(indices) != len(chunk):
        return in_order
    position = {item.get("index"): at for at, item in enumerate(chunk)}
    rows = [position.get(int(value)) for value in indices.tolist()]
    return rows if None not in rows and sorted(rows) == in_order else in_order


def sub_batch(batch: Batch, rows: Sequence[int]) -> Batch:
    """The given rows as a batch: every tensor whose first dimension is the batch is sliced, and every list
    or tuple with one entry per row (``"lengths": [7, 5, 9]``, texts), which a loss may read per row."""
    size = batch_size(batch)
    picked = torch.as_tensor(list(rows), dtype=torch.long)

    def part(value: Any) -> Any:
        if torch.is_tensor(value):
            return value[picked] if value.dim() > 0 and value.shape[0] == size else value
        if type(value) in (list, tuple) and len(value) == size and size > 1:  # not a named tuple of other things
            return type(value)([value[row] for row in rows])
        return value

    return {key: part(value) for key, value in batch.items()}


def sub_output(output: Any, rows: Sequence[int], size: int) -> Any:
    """The model output restricted to ``rows`` (tensors, tuples and dicts of tensors)."""
    picked = torch.as_tensor(list(rows), dtype=torch.long)
    if torch.is_tensor(output):
        return output[picked] if output.dim() > 0 and output.shape[0] == size else output
    if isinstance(output, (tuple, list, dict)):
        return same_kind(output, _map(output, lambda o: sub_output(o, rows, size)))
    return output


def _map(output: tuple | list | dict, part: Callable[[Any], Any]) -> list | dict:
    if isinstance(output, dict):
        return {k: part(v) for k, v in output.items()}
    return [part(o) for o in output]


def same_kind(output: tuple | list | dict, parts: list | dict) -> Any:
    """``parts`` in a container of ``output``'s own type: a named tuple stays one, and a dict subclass
    (transformers' ``ModelOutput``) keeps its attributes, so ``out.logits`` works in ``loss_sum``."""
    if isinstance(output, dict):
        if type(output) is dict:
            return dict(parts)
        rebuilt = copy.copy(output)
        for key, value in parts.items():
            rebuilt[key] = value  # ModelOutput sets the attribute with the item
        return rebuilt
    if hasattr(output, "_fields"):  # a named tuple
        return type(output)(*parts)
    return type(output)(parts)


def input_ids_key(batch: Batch) -> str:
    """Which key holds a batch's token ids: ``input_ids``, else ``inputs``."""
    return "input_ids" if "input_ids" in batch else "inputs"


def input_ids_of(batch: Batch) -> torch.Tensor | None:
    """The token ids of a sequence batch (``input_ids``; ``inputs`` when it holds integers)."""
    ids = batch.get(input_ids_key(batch))
    if torch.is_tensor(ids) and ids.is_floating_point():
        return None
    return ids if torch.is_tensor(ids) and ids.dim() == 2 else None


def padding_mask(task: TaskData, batch: Batch) -> torch.Tensor | None:
    """(rows, width) True on real positions: ``attention_mask``, else ids != ``info["pad_id"]``;
    None when the batch does not say where its padding is."""
    size = batch_size(batch)
    mask = batch.get("attention_mask")
    if torch.is_tensor(mask) and mask.dim() == 2 and mask.shape[0] == size:
        return mask.bool()
    ids = input_ids_of(batch)
    if ids is not None and ids.shape[0] == size and "pad_id" in task.info:
        return ids != int(task.info["pad_id"])
    return None


DECODER_KEYS = ("decoder_input_ids", "decoder_attention_mask")  # a seq2seq batch (transformers' names)
SEQ2SEQ = "seq2seq"  # a task of this kind labels its decoder's positions, even with no decoder key in the batch


def decoder_side(batch: Batch) -> bool:
    """Whether the batch has a decoder: its labels are the decoder's positions, not the encoder's
    (padded to one common width, they are as wide as ``attention_mask`` and still not its positions)."""
    return any(torch.is_tensor(batch.get(key)) for key in DECODER_KEYS)


def decoder_mask(batch: Batch, like: torch.Tensor) -> torch.Tensor | None:
    """The decoder's real positions where the batch states them (``decoder_attention_mask``) with the
    shape of ``like``; None otherwise (a decoder's pad id may also be its start token: T5)."""
    mask = batch.get("decoder_attention_mask")
    if (
        torch.is_tensor(mask)
        and torch.is_tensor(like)
        and like.dim() >= 2
        and tuple(mask.shape) == tuple(like.shape[:2])
    ):
        return mask.bool()
    return None


def real_mask(task: TaskData, batch: Batch) -> torch.Tensor | None:
    """Real (non-padding) positions of the labels: ``attention_mask``, else ids != ``info["pad_id"]``,
    else all; a decoder's labels: ``decoder_attention_mask``, else their own (labels != -100)."""
    ids = input_ids_of(batch)
    labels = batch["labels"]
    if labels.dim() < 2:
        return None
    if decoder_side(batch) or task.kind == SEQ2SEQ:  # (transformers' T5 given only labels builds its own)
        mask = decoder_mask(batch, labels)
        return mask if mask is not None else labels != IGNORE_INDEX
    mask = batch.get("attention_mask")
    if torch.is_tensor(mask) and mask.shape == labels.shape:
        return mask.bool()
    if ids is not None and ids.shape == labels.shape and "pad_id" in task.info:
        return ids != int(task.info["pad_id"])
    if ids is not None and ids.shape != labels.shape:  # labels of their own positions (a decoder's): theirs
        return labels != IGNORE_INDEX
    return torch.ones_like(labels, dtype=torch.bool)


def counted_label_mask(task: TaskData, labels: torch.Tensor) -> torch.Tensor:
    """Label positions the loss counts: != -100, minus column 0 when a next-token loss shifts."""
    counted = labels != IGNORE_INDEX
    if labels.dim() >= 2 and task.convention == NEXT_TOKEN and not task.labels_shifted:
        counted[:, 0] = False  # the loss pairs output t-1 with label t: label 0 has no output
    return counted


def prediction_offset(task: TaskData) -> int:
    """Input position predicted by the label at position p is p + this offset."""
    return 1 if task.convention == NEXT_TOKEN and task.labels_shifted else 0


def spans(positions: Sequence[int], limit: int = 8) -> str:
    """[1, 2, 3, 7] -> '1-3, 7' (at most ``limit`` runs, then '...')."""
    runs: list[list[int]] = []
    for p in sorted(int(p) for p in positions):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    text = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs[:limit])
    return text + (", ..." if len(runs) > limit else "")


# ----------------------------------------------------------------------------- the loss's gradient
def float_leaves(output: Any) -> tuple[Any, list[torch.Tensor]]:
    """The output with every floating tensor replaced by a detached leaf that requires grad."""
    if torch.is_tensor(output):
        if output.is_floating_point():
            leaf = output.detach().float().requires_grad_(True)
            return leaf, [leaf]
        return output, []
    if isinstance(output, (tuple, list, dict)):
        parts = _map(output, float_leaves)
        pairs = parts.values() if isinstance(parts, dict) else parts
        rebuilt = {k: p[0] for k, p in parts.items()} if isinstance(parts, dict) else [p[0] for p in parts]
        return same_kind(output, rebuilt), [leaf for p in pairs for leaf in p[1]]
    return output, []


def _floating(output: Any) -> list[torch.Tensor]:
    """The floating tensors of an output that autograd reaches (computed with gradient)."""
    if torch.is_tensor(output):
        return [output] if output.is_floating_point() and output.requires_grad else []
    if isinstance(output, (tuple, list, dict)):
        values = output.values() if isinstance(output, dict) else output
        return [t for o in values for t in _floating(o)]
    return []


def _used(
    tensors: Sequence[torch.Tensor], grads: Sequence[torch.Tensor | None]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The (tensor, gradient) pairs the loss trains, scalars left out: a loss that ``forward`` already
    computed (``out.loss``) has a gradient but no position or class to compare."""
    return [(t, g) for t, g in zip(tensors, grads) if g is not None and t.dim() > 0 and bool(g.any())]


def label_vectors(batches: list[Batch]) -> bool:
    """Float label rows of one width in every batch beside token ids whose width differs from it in one or
    more: a vector of labels per example (multi-hot tags, class probabilities), not positions of the input."""
    labels = [b.get("labels") for b in batches]
    if not labels or not all(torch.is_tensor(x) and x.dim() == 2 and x.is_floating_point() for x in labels):
        return False
    ids = [input_ids_of(b) for b in batches]
    return len({x.shape[-1] for x in labels}) == 1 and any(
        i is not None and i.shape[-1] != x.shape[-1] for i, x in zip(ids, labels)
    )


def trained_head_widths(task: TaskData, output: Any, batch: Batch) -> list[int]:
    """The width (last dimension) of each output tensor of scores the loss trains directly: more than one
    for a loss that adds several heads' terms per target (two classifiers summed)."""
    leafed, leaves = float_leaves(output)
    if not leaves:
        return []
    loss = task.loss_sum(leafed, batch)
    if not torch.is_tensor(loss) or not loss.requires_grad:
        return []
    grads = torch.autograd.grad(loss.float(), leaves, allow_unused=True)
    return [int(t.shape[-1]) for t, _ in _used(leaves, grads) if t.dim() >= 2 and t.shape[-1] > 1]


def output_gradient(
    task: TaskData, output: Any, batch: Batch, recompute: Callable[[], Any] | None = None
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(scores, d loss_sum / d scores, loss_sum) for the output tensor the loss reads.

    ``output`` is the model's output, computed without gradient; it becomes a leaf, so the
    probe costs one loss backward and never touches the model's parameters. A ``loss_sum`` that
    reads none of those tensors (a loss computed inside ``forward``, ``out.loss`` of a transformers
    model given the labels) is probed on ``recompute()``, the forward run again with gradient:
    the gradient then reaches the output tensors the model computed that loss from (the
    parameters get none).
    """
    leafed, leaves = float_leaves(output)
    if not leaves:
        raise ValueError("the model's output holds no floating-point tensor to differentiate")
    loss = task.loss_sum(leafed, batch)
    grads = torch.autograd.grad(loss.float(), leaves, allow_unused=True) if loss.requires_grad else [None] * len(leaves)
    used = _used(leaves, grads)
    if not used and recompute is not None:
        with torch.enable_grad():
            computed = recompute()
            tensors = _floating(computed)
            loss = task.loss_sum(computed, batch)
            if tensors and loss.requires_grad:
                grads = torch.autograd.grad(loss.float(), tensors, allow_unused=True)
                used = _used([t.detach().float() for t in tensors], [g if g is None else g.float() for g in grads])
    if not used:
        leaf = leaves[0]
        return leaf.detach(), torch.zeros_like(leaf), float(loss.detach())
    leaf, grad = max(used, key=lambda pair: pair[0].numel())  # the logits: the largest used output
    labels = batch.get("labels")
    leaf, grad = labels_layout(leaf, grad, labels)
    if torch.is_tensor(labels) and leaf.dim() >= 1 and leaf.shape == labels.shape and per_target(labels):
        leaf, grad = leaf.unsqueeze(-1), grad.unsqueeze(-1)  # a squeezed binary logit, a distance: not classes
    return leaf.detach(), grad, float(loss.detach())


def labels_layout(leaf: torch.Tensor, grad: torch.Tensor, labels: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores laid out otherwise than their labels, viewed as [B, *positions, classes] beside [B, *positions]:
    cross_entropy's class dimension 1 ([B, C, H, W] beside a segmentation's [B, H, W] mask, a 1-D conv's
    [B, C, T] beside [B, T]) and a sequence-first [T, B, C] (an RNN or transformer without batch_first) beside
    [B, T] labels. Each was "not judged (CTC-style)": no output position stood beside its label, so a loss that
    pairs them wrongly (a [T, B, C] output flattened as [B, T, C]) passed every check. Where both readings fit
    (T = B), the output is taken as it is."""
    if not torch.is_tensor(labels) or labels.dim() < 2 or leaf.dim() != labels.dim() + 1:
        return leaf, grad
    if tuple(leaf.shape[:-1]) == tuple(labels.shape):
        return leaf, grad
    if leaf.shape[0] == labels.shape[0] and tuple(leaf.shape[2:]) == tuple(labels.shape[1:]):
        return leaf.movedim(1, -1), grad.movedim(1, -1)
    if sequence_first(leaf, labels):
        return leaf.transpose(0, 1), grad.transpose(0, 1)
    return leaf, grad


def sequence_first(output: Any, labels: Any) -> bool:
    """A [T, B, C] output beside [B, T] labels (T != B): read sequence-first by ``labels_layout``."""
    return (
        torch.is_tensor(output)
        and torch.is_tensor(labels)
        and labels.dim() == 2
        and output.dim() == 3
        and labels.shape[0] != labels.shape[1]
        and tuple(output.shape[:2]) == (labels.shape[1], labels.shape[0])
    )


def paired_outputs(task: TaskData, output: Any, batch: Batch) -> str:
    """Where the loss reads two or more outputs of one shape (a siamese pair's embeddings, a two-tower
    model's): how many and their shape; empty otherwise. Such outputs are representations the loss compares
    with each other, not one score per class."""
    leafed, leaves = float_leaves(output)
    loss = task.loss_sum(leafed, batch) if leaves else None
    if loss is None or not loss.requires_grad:
        return ""
    shapes = [tuple(t.shape) for t, _ in _used(leaves, torch.autograd.grad(loss.float(), leaves, allow_unused=True))]
    common = max(shapes, key=shapes.count) if shapes else None
    return f"{shapes.count(common)} outputs of shape {list(common)}" if common and shapes.count(common) >= 2 else ""


def per_target(labels: torch.Tensor) -> bool:
    """Labels an output of their own shape scores one number each: class ids, or one float per row (a
    regression's); not soft or multi-hot targets (a float per class, scored by a logit per class)."""
    return not labels.is_floating_point() or labels.dim() == 1


def pushed_classes(grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(class the loss pushes up, trained?) per output position: the most negative gradient entry.

    For cross-entropy the gradient on the logits is softmax - one-hot, negative only at the target.
    """
    trained = (grad != 0).any(dim=-1)
    return grad.argmin(dim=-1), trained & (grad.min(dim=-1).values < 0)


def positions_unlike_labels(labels: Any, grad: torch.Tensor) -> str | None:
    """How the output's positions differ from the labels' when they are not one per label position
    (CTC: more frames than label tokens), or None. Then no output position stands for the label at
    the same place: a check that pairs them has nothing to pair."""
    if not torch.is_tensor(labels) or labels.dim() < 2 or grad.dim() < labels.dim():
        return None
    positions = tuple(grad.shape[: labels.dim()])
    if positions == tuple(labels.shape):
        return None
    return f"the output has {positions[1:]} positions per row, the labels {tuple(labels.shape[1:])}"
