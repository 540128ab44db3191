"""What a task hands the engine: split examples, a collate function and the objective.

A built-in task (``pilot.data.instructions``, ``pilot.data.digits``) and a
user's own (README, "Your own model and data") return the same ``TaskData``.
The objective returns a *sum* of per-target losses and the number of targets,
never a mean: the engine divides by the target count of the whole update, so
accumulation, replicas and a partial last window give the full-batch gradient.

A batch from ``collate`` must hold ``index`` (the examples' positions in the
data set, a 1-D tensor) and ``labels`` (targets; -100 marks a position that is
not in the loss) besides whatever ``forward`` reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

import torch

Batch = Dict[str, torch.Tensor]
IGNORE_INDEX = -100  # label of a position that does not count in the loss


@dataclass
class Example:
    """One raw example. ``group`` is the unit that must not straddle two splits."""
    index: int                 # position in the full data set (stable identity)
    group: str                 # conversation, patient, source document...
    fields: Dict[str, Any]     # task-specific raw content (text, pixels, label...)
    time: Optional[float] = None  # for time-ordered splits


@dataclass
class TaskData:
    kind: str                                  # "generation", "classification" or a user's name
    splits: Dict[str, List[Example]]           # "train", "val", "test"
    encode: Callable[[Example], Dict[str, Any]]  # raw example -> tensors of one example
    collate: Callable[[List[Dict[str, Any]]], Batch]  # encoded examples -> one micro-batch
    loss_sum: Callable[[Any, Batch], torch.Tensor]     # model output, batch -> summed loss
    target_count: Callable[[Batch], torch.Tensor]      # batch -> number of targets in the loss
    predict: Callable[[Any, Batch], torch.Tensor]      # model output -> predicted ids
    forward: Callable[[torch.nn.Module, Batch], Any] = field(
        default=lambda model, batch: model(batch["inputs"]))
    correct_count: Optional[Callable[[Any, Batch], torch.Tensor]] = None  # default: exact match
    # generation tasks: the target token ids the task *means* to train for an example, and a
    # decoder; the pilot compares them with what the loss actually sees
    expected_targets: Optional[Callable[[Example], List[int]]] = None
    decode_tokens: Optional[Callable[[List[int]], List[str]]] = None
    info: Dict[str, Any] = field(default_factory=dict)  # class names, pad id, vocab size...
    # sequence tasks: a batch of ``micro_batch`` examples of exactly ``seq_len`` real tokens, all
    # in the loss — the worst case the memory estimator (pilot.estimate) runs at a target length
    synthetic_batch: Optional[Callable[[int, int], Batch]] = None

    def count_correct(self, output: Any, batch: Batch) -> torch.Tensor:
        """Targets predicted exactly (or the task's own notion of correct)."""
        if self.correct_count is not None:
            return self.correct_count(output, batch)
        labels = batch["labels"]
        return ((self.predict(output, batch) == labels) & (labels != IGNORE_INDEX)).sum()

    def encoded(self, split: str) -> List[Dict[str, Any]]:
        """Encode a split once; the engine indexes into this list."""
        return [self.encode(example) for example in self.splits[split]]


def move_to(batch: Mapping[str, Any], device: torch.device) -> Batch:
    return {k: (v.to(device, non_blocking=True) if torch.is_tensor(v) else v)
            for k, v in batch.items()}


def enum_value(value: Any) -> Any:
    """A config enum member as its plain value ("left", not PaddingSide.left)."""
    return getattr(value, "value", value)
