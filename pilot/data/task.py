"""What a task hands the engine: split examples, a collate function and the objective.

A built-in task (``pilot.data.instructions``, ``pilot.data.digits``) and a
user's own (README, "Your own model and data") return the same ``TaskData``.
The objective returns a *sum* of per-target losses and the number of targets,
never a mean: the engine divides by the target count of the whole update, so
accumulation, replicas and a partial last window give the full-batch gradient.

A batch from ``collate`` must hold ``index`` (the examples' positions in the
data set, a 1-D tensor) and ``labels`` (targets; -100 marks a position that is
not in the loss) besides whatever ``forward`` reads. Sequence tasks also give
``input_ids`` and ``attention_mask`` (1 = real token, 0 = padding); the pilot
reads them to check what the loss counts.

Where a target sits (``target_position``): "next_token" — the output at
position t is trained towards input token t+1 (a causal LM), "same_position"
— the output at t (or row b) is trained towards its own label
(classification, tagging). ``labels_shifted`` says which of the two layouts a
next-token task's labels use: False, ``labels[t]`` is token t and
``loss_sum`` shifts; True, ``collate`` already shifted them (``labels[t]`` is
token t+1) and ``loss_sum`` must not shift again. The alignment check reads
the loss's own gradient to verify the declaration.

Classes by name: ``class_names`` (id -> name) and ``raw_label(example)`` (the
example's class *name* as in the raw data, before any encoding) let the pilot
check the ids in ``batch["labels"]`` against the names they stand for. Without
``raw_label`` the raw name is read from ``example.fields["label_name"]`` when
there is one (the built-in digits task), and the by-name checks are skipped
(and said so) when there is none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pilot.errors import PilotError, encode_note

Batch = dict[str, torch.Tensor]
IGNORE_INDEX = -100  # label of a position that does not count in the loss
NEXT_TOKEN, SAME_POSITION = "next_token", "same_position"  # the two target conventions
RAW_LABEL_FIELD = "label_name"  # where the raw class name is read when raw_label is not given
CONTRACT = 'README, "Your own model and data"'  # where a user reads the contract below
REQUIRED_BATCH_KEYS = ("index", "labels")  # what every collated batch holds, whatever forward reads


class ContractError(PilotError, ValueError):
    """A task or model that does not keep the contract of this module; the message names the key."""


def logits_of(output: Any) -> torch.Tensor:
    """The logits in a model's output: a tensor, the first element of a tuple or list, or
    ``output.logits`` / ``output["logits"]`` (transformers' ``ModelOutput``, a dict)."""
    if torch.is_tensor(output):
        return _not_a_number(output, output)
    if isinstance(output, Mapping):
        logits = output.get("logits")
    elif isinstance(output, (tuple, list)):
        logits = output[0] if output else None
    else:
        logits = getattr(output, "logits", None)
    if torch.is_tensor(logits):
        return _not_a_number(logits, output)
    keys = f" (it has {sorted(output)})" if isinstance(output, Mapping) else ""
    raise ContractError(
        f"the model's forward returned {type(output).__name__}{keys}, with no logits. Fix: forward must "
        "return the logits tensor, a tuple whose first element is the logits, or an object or dict with "
        f"`logits` (transformers' ModelOutput) ({CONTRACT})."
    )


def _not_a_number(logits: torch.Tensor, output: Any) -> torch.Tensor:
    """``logits`` unless it is one number (0-d), which scores no example: a loss, as transformers' tuple output
    puts first when given labels (``return_dict=False``: ``(loss, logits, ...)``)."""
    if logits.dim() > 0:
        return logits
    if isinstance(output, (tuple, list)):
        where = "a tuple whose first element, read as the logits, is one number (a 0-d tensor: a loss?)"
    elif torch.is_tensor(output):
        where = "one number (a 0-d tensor: a loss?) as the logits"
    else:
        where = f"{type(output).__name__} whose logits are one number (a 0-d tensor: a loss?)"
    raise ContractError(
        f"the model's forward returned {where}: no example has scores. Fix: forward returns the logits first, or an object with `logits` (transformers: "
        f"return_dict=True, read as output.logits; given labels with return_dict=False it returns (loss, logits, "
        f"...)) ({CONTRACT})."
    )


def require_batch_keys(batch: Mapping[str, Any], keys: Sequence[str] = REQUIRED_BATCH_KEYS) -> None:
    """Refuse a collated batch without ``keys``, naming the missing ones and the contract."""
    missing = [key for key in keys if key not in batch]
    if missing:
        raise ContractError(
            f"the collated batch has no {', '.join(repr(k) for k in missing)} (it has {sorted(batch)}). "
            "Fix: collate must return 'index' (the examples' positions) and 'labels' (-100 outside the "
            f"loss), plus every key forward reads ({CONTRACT})."
        )


@dataclass
class Example:
    """One raw example. ``group`` is the unit that must not straddle two splits."""

    index: int  # position in the full data set (stable identity)
    group: str  # conversation, patient, source document...
    fields: dict[str, Any]  # task-specific raw content (text, pixels, label...)
    time: float | None = None  # for time-ordered splits


@dataclass
class TaskData:
    kind: str  # "generation", "classification" or a user's name
    splits: dict[str, list[Example]]  # "train", "val", "test"
    encode: Callable[[Example], dict[str, Any]]  # raw example -> tensors of one example
    collate: Callable[[list[dict[str, Any]]], Batch]  # encoded examples -> one micro-batch
    loss_sum: Callable[[Any, Batch], torch.Tensor]  # model output, batch -> summed loss
    target_count: Callable[[Batch], torch.Tensor]  # batch -> number of targets in the loss
    predict: Callable[[Any, Batch], torch.Tensor]  # model output -> predicted ids
    forward: Callable[[torch.nn.Module, Batch], Any] = field(default=lambda model, batch: model(batch["inputs"]))
    correct_count: Callable[[Any, Batch], torch.Tensor] | None = None  # default: exact match
    # generation tasks: the target token ids the task *means* to train for an example, and a
    # decoder; the pilot compares them with what the loss actually sees
    expected_targets: Callable[[Example], list[int]] | None = None
    decode_tokens: Callable[[list[int]], list[str]] | None = None
    info: dict[str, Any] = field(default_factory=dict)  # class names, pad id, vocab size...
    # sequence tasks: a batch of ``micro_batch`` examples of exactly ``seq_len`` real tokens, all
    # in the loss — the worst case the memory estimator (pilot.estimate) runs at a target length
    synthetic_batch: Callable[[int, int], Batch] | None = None
    # where a target sits: "next_token" (output t -> input token t+1) or "same_position" (output t
    # or row b -> its own label); None: by kind (generation -> next_token, any other -> same_position)
    target_position: str | None = None
    labels_shifted: bool = False  # next_token: collate already shifted labels (labels[t] = token t+1)
    # classification by name: id -> class name (default: info["class_names"]), and the raw class
    # name of an example before encoding (default: example.fields["label_name"] when present)
    class_names: Sequence[str] | None = None
    raw_label: Callable[[Example], Any] | None = None
    # the objective check warns when a fresh model's loss per target is outside
    # ln(outputs) x [1 - tolerance, 1 + tolerance]; None skips that comparison
    initial_loss_tolerance: float | None = 0.5

    def __post_init__(self) -> None:
        if self.target_position not in (None, NEXT_TOKEN, SAME_POSITION):
            raise ValueError(
                f"TaskData.target_position={self.target_position!r}: must be "
                f"'{NEXT_TOKEN}', '{SAME_POSITION}' or None (by kind)."
            )

    @property
    def convention(self) -> str:
        """The declared target position, or the one the kind implies."""
        if self.target_position is not None:
            return self.target_position
        return NEXT_TOKEN if self.kind == "generation" else SAME_POSITION

    def names(self) -> list[str]:
        """Class names by id (``class_names``, else ``info["class_names"]``; empty when neither)."""
        names = self.class_names if self.class_names is not None else self.info.get("class_names", [])
        return [str(name) for name in names]

    def raw_class_name(self, example: Example) -> str | None:
        """The example's class name as the raw data gives it, or None when the task declares none."""
        if self.raw_label is not None:  # None: the example has no class of this kind (another head's)
            return None if (name := self.raw_label(example)) is None else str(name)
        name = example.fields.get(RAW_LABEL_FIELD)
        return None if name is None else str(name)

    def count_correct(self, output: Any, batch: Batch) -> torch.Tensor:
        """Targets predicted exactly (or the task's own notion of correct)."""
        if self.correct_count is not None:
            return self.correct_count(output, batch)
        labels = batch["labels"]
        return ((self.predict(output, batch) == labels) & (labels != IGNORE_INDEX)).sum()

    def count_compared(self, batch: Batch) -> torch.Tensor:
        """What ``count_correct`` is a share of: the task's targets where it counts correct itself, else the
        labels predict is compared with (every one but ignored ones: one per example where ``target_count``
        counts a CORN head's K-1 sub-tasks or sums example weights); 0 for float labels (values or soft
        targets), which a prediction never equals: no accuracy."""
        if self.correct_count is not None:
            return torch.as_tensor(self.target_count(batch), dtype=torch.float64)
        labels = batch["labels"]
        if not torch.is_tensor(labels) or labels.is_floating_point():
            return torch.zeros((), dtype=torch.float64)
        return (labels != IGNORE_INDEX).sum().double()

    def encoded(self, split: str) -> list[dict[str, Any]]:
        """Encode a split once; the engine indexes into this list. An error of ``encode`` is raised as it is,
        with a note naming the split and example it raised on (``errors.built_with_error`` says it)."""
        items = []
        for position, example in enumerate(self.splits[split]):
            try:
                items.append(self.encode(example))
            except Exception as error:
                error.add_note(encode_note(split, position, getattr(example, "index", position)))
                raise
        return items


def move_to(batch: Mapping[str, Any], device: torch.device) -> Batch:
    return {k: (v.to(device, non_blocking=True) if torch.is_tensor(v) else v) for k, v in batch.items()}


def batch_seq_len(batch: Mapping[str, Any]) -> int | None:
    """The width of a sequence batch's ``input_ids``; None for a batch without them."""
    ids = batch.get("input_ids")
    return int(ids.shape[-1]) if ids is not None else None


def longest_items(task: TaskData, split: str, count: int) -> list[dict[str, Any]]:
    """The ``count`` longest encoded examples of a split (of train when the split is empty; all of
    them when lengths are equal): the evaluation batch with the largest activations."""
    items = task.encoded(split) or task.encoded("train")

    def length(item):
        ids = item.get("input_ids")
        return len(ids) if ids is not None else 0

    return sorted(items, key=length, reverse=True)[:count]
