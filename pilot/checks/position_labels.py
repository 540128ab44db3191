"""Labels that point past their own sequence: a position label no output of the model can score.

Where the model scores the positions of its input (extractive question answering: start and end logits
``[rows, 2, length]``; a pointer over the tokens) its output is as wide as the sequence it reads, and a label
is a position in it. A label at or past the sequence's length is no position: cross_entropy raises
``Target 41 is out of bounds`` in every step that computes the loss, and a loss that clamps positions
(transformers' QA convention: clamped to the length and ignored) silently trains nothing on that example.
Answer offsets in *characters* (``answer_start`` of SQuAD-style data) used as token positions do this to
most examples; positions computed before truncation, to the examples whose answer was cut away.

Seen from the data, on a fresh model: the output's last dimension is the sequence's length for two training
examples of different lengths, each collated alone (the output then scores positions); then each of the
first ``ROWS`` training examples, collated alone, whose position labels (``labels`` one per row of scores,
``start_positions`` / ``end_positions``) hold a value >= its own length. ``contract`` refuses the task
where ``loss_sum`` cannot take such an example (every later step would crash on it alike); ``inspect``
fails it where the loss takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_probe import input_ids_of
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData, logits_of, move_to

ROWS = 512  # first training examples read (collated alone, no forward)
POSITION_KEYS = ("labels", "start_positions", "end_positions")  # keys whose values may be positions
MOSTLY = 0.5  # of the examples read: past the sequence in this share or more, character offsets are likely


@dataclass
class PastTheSequence:
    """What was found: the examples read, those holding a position past their own length, the first of them."""

    read: int
    past: list[int]  # position in the items read
    first_index: int | None  # the first one's ``index``
    label: int  # its first label past the sequence
    length: int  # its sequence's length
    largest: int  # the largest label past a sequence, over every example
    keys: list[str]
    widths: tuple[int, int]  # the two lengths the output's width was seen to follow


def _width(batch: dict[str, Any]) -> int | None:
    ids = input_ids_of(batch)
    return int(ids.shape[1]) if ids is not None and ids.shape[0] == 1 else None


def _positions(batch: dict[str, Any], scores_shape: tuple[int, ...] | None) -> dict[str, torch.Tensor]:
    """The batch's position labels: ``labels`` as many as the rows of scores (``scores_shape[:-1]``), and
    ``start_positions`` / ``end_positions``; integer tensors only, ignored values (-100) left out."""
    found = {}
    for key in POSITION_KEYS:
        value = batch.get(key)
        if not torch.is_tensor(value) or value.is_floating_point() or value.dtype == torch.bool or not value.numel():
            continue
        if key == "labels" and (scores_shape is None or tuple(value.shape) != scores_shape[:-1]):
            continue
        found[key] = value[value != IGNORE_INDEX]
    return found


def run_alone(task: TaskData, model: torch.nn.Module, item: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(the model's output, the batch) for one example collated alone, on the model's device, in evaluation
    mode without gradient; the model's mode restored."""
    batch = task.collate([item])
    parameter = next(model.parameters(), None)
    batch = move_to(batch, parameter.device) if parameter is not None else batch
    with untouched(model), torch.no_grad():
        model.eval()
        return task.forward(model, batch), batch


def scores_positions(task: TaskData, model: torch.nn.Module, items: list[dict[str, Any]]) -> tuple | None:
    """(the scores' shape for the first example, the two lengths seen) where the model's output is as wide
    as the sequence for two examples of different lengths collated alone; None otherwise."""
    seen: dict[int, tuple[int, ...]] = {}
    for item in items[:64]:
        width = _width(task.collate([item]))
        if width is None or width in seen:
            continue
        scores = logits_of(run_alone(task, model, item)[0])
        if scores.dim() < 2 or int(scores.shape[-1]) != width:
            return None
        seen[width] = tuple(scores.shape)
        if len(seen) == 2:
            (first, shape), (second, _) = seen.items()
            return shape, (first, second)
    return None


def positions_past_the_sequence(
    task: TaskData, model: torch.nn.Module, items: list[dict[str, Any]]
) -> PastTheSequence | None:
    """The training examples whose position labels lie past their own sequence; None where the model's
    output does not score positions or no example holds such a label. The random state is left as it was
    (a collate that draws, as a masked LM's does, would otherwise move every later check's draws)."""
    if not items:
        return None
    with torch.random.fork_rng(devices=[]):
        scored = scores_positions(task, model, items)
        return None if scored is None else _past(task, items, *scored)


def _past(task: TaskData, items: list[dict[str, Any]], shape: tuple, widths: tuple) -> PastTheSequence | None:
    past, read, first, keys, largest = [], 0, (0, 0), set(), 0
    for at, item in enumerate(items[:ROWS]):
        batch = task.collate([item])
        length = _width(batch)
        if length is None:
            continue
        read += 1
        labels = _positions(batch, (1, *shape[1:-1], length))
        beyond = {key: value[value >= length] for key, value in labels.items()}
        beyond = {key: value for key, value in beyond.items() if value.numel()}
        if beyond:
            first = first if past else (int(next(iter(beyond.values()))[0]), length)
            past.append(at)
            keys.update(beyond)
            largest = max(largest, *(int(v.max()) for v in beyond.values()))
    if not past:
        return None
    index = items[past[0]].get("index")
    named = isinstance(index, int) or (torch.is_tensor(index) and index.numel() == 1)
    return PastTheSequence(read, past, int(index) if named else None, *first, largest, sorted(keys), widths)


def likely_cause(found: PastTheSequence) -> str:
    """Character offsets where most examples point past their sequence; positions from before truncation
    where a few do."""
    characters = (
        "character offsets of the answer in its text (answer_start of SQuAD-style data) used as token positions"
    )
    untruncated = "positions counted on the text before it was truncated to the length the model reads"
    if len(found.past) >= MOSTLY * found.read:
        return f"most likely {characters} (or {untruncated})"
    return f"most likely {untruncated} (or {characters})"


def describe(found: PastTheSequence, named: bool = True) -> str:
    """What was found, why it matters and its likely cause (the fix: ``FIX``); ``named``: the first example's
    index in it, where no finding names it."""
    where = f"train example {found.first_index}" if named and found.first_index is not None else "the first"
    keys = ", ".join(f"batch['{k}']" for k in found.keys)
    return (
        f"position labels past the sequence: {len(found.past)} of the first {found.read} training examples, "
        f"collated alone, hold a position ({keys}) at or past their own length ({where}: position {found.label}, "
        f"its sequence holds {found.length} tokens; largest such label {found.largest}). The model's output scores "
        f"the sequence's positions (its width follows the input's: {found.widths[0]} and {found.widths[1]} for two "
        "examples), so such a label is no position of it: cross_entropy raises 'Target ... is out of bounds', and a "
        "loss that clamps positions (transformers' QA loss) ignores the example, which then trains nothing. "
        f"Labels this far out are {likely_cause(found)}"
    )


FIX = (
    "Fix: map the answer's characters to tokens on the very encoding the model reads: the tokenizer's offset "
    "mapping (return_offsets_mapping=True, with sequence_ids() to stay in the context) or "
    "encoding.char_to_token(answer_start); label an answer cut away by truncation as no-answer (position 0, the "
    "[CLS]) or -100"
)


def position_label_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """Inspect's part: a finding (fail) where training examples hold positions past their sequence."""
    found = positions_past_the_sequence(task, model, encoded)
    if found is None:
        return [], {}
    details = {"examples_read": found.read, "past_the_sequence": len(found.past), "largest_label": found.largest}
    return [Finding(f"{describe(found, named=False)}. {FIX}", "train", found.first_index)], details
