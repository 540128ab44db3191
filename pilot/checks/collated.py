"""What the loss counts in the *collated* batch, row by row, compared with what the task declares.

Every example of every split is collated as training collates it (consecutive micro-batches of
the configured size, so padding happens as in training). For each row:

1. the positions the loss counts (``labels != -100``; for a next-token loss that shifts, column 0
   never counts) and the input position each of them predicts (``TaskData.convention`` and
   ``labels_shifted``);
2. a counted position must not predict a padding token (attention mask 0 there), nor be predicted
   from one, and its label must be the input token it predicts (next-token tasks);
3. the row must be what the example gives on its own: its real positions equal ``collate([item])``
   and the encoded item, whatever else shares the micro-batch (skipped, and said so, when
   ``collate`` is random: masking or augmentation drawn per call);
4. the counted tokens must be the declared target (``TaskData.expected_targets``): a declared target
   token not counted, a non-target token counted (the instruction, when the task masks it), a
   target cut by truncation, or no target at all is a finding naming split, example and positions.

``examples.txt`` is drawn from the same ``RowView``s (the tokens, the ``^`` row, the target line
and the header's counts), so the shown example and the check can never disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from pilot.checks.collate_mutation import changed_by_collate
from pilot.checks.declared_target import NO_TARGET, compare_targets, cut_by_encode, last_occurrence, named_cut
from pilot.checks.loss_probe import (
    batch_size,
    counted_label_mask,
    input_ids_of,
    label_vectors,
    micro_batches,
    prediction_offset,
    real_mask,
    row_items,
    spans,
)
from pilot.checks.padding import pad_masked_targets
from pilot.checks.result import Finding
from pilot.checks.row_differences import row_differences, same
from pilot.checks.row_pairing import rows_of_other_examples
from pilot.checks.untrained_labels import LossPositions
from pilot.data.task import NEXT_TOKEN, RAW_LABEL_FIELD, Batch, Example, TaskData


@dataclass
class RowView:
    """One example as it reaches the loss: its row in the micro-batch it was collated in."""

    split: str
    example: Example
    item: dict[str, Any]
    batch: Batch
    row: int
    counted: list[int] = field(default_factory=list)  # label positions the loss counts
    predicted: list[int] = field(default_factory=list)  # input positions those labels predict
    values: list[int] = field(default_factory=list)  # label values there (a class id per row)
    cut: tuple[int, int] | None = None  # (tokens kept, tokens encode gave) when collate truncated the row
    collated_with: int = 1  # examples collated into its micro-batch
    aligned: bool = True  # False: the micro-batch's label rows are fewer than its examples (packed together)
    per_example: bool = False  # a vector of labels per example (``label_vectors``), not positions of the input

    @property
    def sequence(self) -> bool:
        return self.batch["labels"].dim() >= 2 and not self.per_example

    @property
    def truncated(self) -> bool:
        """Cut by encode (its ``truncated_tokens``) or by collate (fewer real tokens than encode gave)."""
        return self.item.get("truncated_tokens", 0) > 0 or self.cut is not None


# ----------------------------------------------------------------------------- the declared target
def target_findings(
    task: TaskData, view: RowView, real: list[int], masked: bool, ids: list[int] | None
) -> list[Finding]:
    """Counted positions vs the declared target's positions (located in the row's real tokens)."""

    def finding(problem: str) -> Finding:
        return Finding(problem, view.split, view.example.index)

    if task.expected_targets is None:
        return [] if view.counted else [finding(NO_TARGET[0])]
    expected = [int(t) for t in task.expected_targets(view.example)]
    start = None
    if ids is not None and task.convention == NEXT_TOKEN and expected:
        start = last_occurrence([ids[p] for p in real], expected)
    encoded = view.item.get("input_ids")
    if ids is not None and torch.is_tensor(encoded) and encoded.dim() == 1 and len(real) < len(encoded):
        view.cut = (len(real), len(encoded))
    if start is None or not view.counted:  # not in the row (truncated, or not input tokens): by value
        problem = compare_targets(view.values, expected, masked)
        if problem and view.cut:
            problem += f" (collate truncated the row: {view.cut[0]} of the {view.cut[1]} tokens encode gave kept)"
        elif problem and cut_by_encode(problem, view.item):  # the cause, named: not guessed
            problem = named_cut(problem, view.item, len(expected), task.info.get("truncation_side"))
        return [finding(problem)] if problem else []
    declared = set(real[start : start + len(expected)])
    counted = set(view.predicted)
    found = []
    missing, extra = sorted(declared - counted), sorted(counted - declared)
    if missing:
        found.append(
            finding(
                f"declared target token(s) not counted in the loss: {len(missing)} of "
                f"{len(expected)} (positions {spans(missing)})"
                + pad_masked_targets(task, [ids[p] for p in missing], view.batch)
            )
        )
    if extra:
        before = all(p < min(declared) for p in extra)
        if before and masked:
            found.append(
                finding(
                    f"instruction tokens counted in the loss: {len(extra)} tokens before the "
                    f"answer are trained although the task masks the instruction "
                    f"(positions {spans(extra)})"
                )
            )
        elif not before:
            found.append(finding(f"non-target token(s) counted in the loss: {len(extra)} (positions {spans(extra)})"))
    return found


def check_row(task: TaskData, view: RowView, masked: bool, lists: dict[str, list]) -> list[Finding]:
    """The problems of one collated sequence row, from its batch's values as Python lists."""

    def finding(problem: str) -> Finding:
        return Finding(problem, view.split, view.example.index)

    labels, mask, ids = lists["labels"][view.row], lists["mask"][view.row], lists["ids"]
    ids = ids[view.row] if ids is not None else None
    width = len(labels)
    real = [p for p in range(width) if mask[p]]
    found = []
    padding = [p for p, q in zip(view.counted, view.predicted) if q >= width or not mask[q]]
    if padding:
        found.append(
            finding(
                f"counted position(s) {spans(padding)} predict a padding token "
                "(attention mask 0 at the predicted token)"
            )
        )
    if task.convention == NEXT_TOKEN:
        blind = [p for p, q in zip(view.counted, view.predicted) if q - 1 < 0 or not mask[q - 1]]
        if blind:
            found.append(
                finding(
                    f"counted position(s) {spans(blind)} are predicted from a padding "
                    "position (no real token before them)"
                )
            )
        if ids is not None:
            wrong = [p for p, q in zip(view.counted, view.predicted) if q < width and ids[q] != labels[p]]
            if wrong:
                found.append(
                    finding(
                        f"labels at position(s) {spans(wrong)} are not the input token they "
                        "predict (labels and inputs misaligned in the collated row)"
                    )
                )
    return found + target_findings(task, view, real, masked, ids)


def _counted_elsewhere(task: TaskData, single: Batch) -> bool:
    """No label counted, but targets the task's own count finds in another key (``aux_labels``: another head's)."""
    try:
        return float(task.target_count(single)) > 0
    except Exception:  # noqa: BLE001 - the contract and objective judge target_count itself
        return False


def _declared_unlabelled(task: TaskData, example: Example) -> bool:
    """An example the task's raw label declares without a class (``raw_label`` gives None: an annotator's
    'unsure', a head it is not annotated for): left out of the loss on purpose, not an example without its
    target. Only for an example with the fields the others have: one whose label sits under another key
    (``Sentiment`` where ``sentiment`` is read) reads as None by mistake."""
    declared = task.raw_label is not None or RAW_LABEL_FIELD in example.fields
    if not declared or task.raw_class_name(example) is not None:
        return False
    usual = Counter(frozenset(e.fields) for e in task.splits.get("train", [])[:64]).most_common(1)
    return not usual or frozenset(example.fields) == usual[0][0]  # its fields as every example's: not a key misread


def check_batch(task: TaskData, views: list[RowView], masked: bool, compare_rows: bool = True) -> list[Finding]:
    """Every problem of the rows of one micro-batch (``compare_rows=False``: a random collate)."""
    if not views[0].aligned:  # rows packed together: nothing to compare row by row
        return []
    singles = [task.collate([view.item]) for view in views]
    differing = row_differences(task, views[0].batch, [v.item for v in views], singles) if compare_rows else {}
    findings: list[Finding] = _rows_of_no_example(task, views)
    if not views[0].sequence:
        findings += [
            Finding(NO_TARGET[1], v.split, v.example.index)
            for v, single in zip(views, singles)
            if not v.counted and not _counted_elsewhere(task, single) and not _declared_unlabelled(task, v.example)
        ]
    else:
        batch = views[0].batch
        ids = input_ids_of(batch)
        lists = {
            "labels": batch["labels"].tolist(),
            "mask": real_mask(task, batch).tolist(),
            "ids": ids.tolist() if ids is not None else None,
        }
        for view in views:
            findings += check_row(task, view, masked, lists)
    # what the loss trains first; how the row came to differ after
    return findings + [
        Finding(f"row {row} of its micro-batch: {d}", views[row].split, views[row].example.index)
        for row, ds in sorted(differing.items())
        for d in ds
    ]


def _rows_of_no_example(task: TaskData, views: list[RowView]) -> list[Finding]:
    """More label rows in the loss than examples collated: rows that no example gave (a collate that
    fills every micro-batch to a fixed size with made-up rows the loss counts) train the model."""
    labels, examples = views[0].batch["labels"], views[0].collated_with
    if labels.dim() == 0 or labels.shape[0] <= examples or labels.shape[0] % examples == 0:
        return []  # (a whole number of rows per example: several views of each, contrasted in the batch)
    counted_rows = int(counted_label_mask(task, labels).reshape(labels.shape[0], -1).any(1).sum())
    if counted_rows <= examples:
        return []  # filler rows the loss ignores (labels -100): static shapes, harmless
    problem = (
        f"its micro-batch collates {examples} example(s) into {labels.shape[0]} label rows, {counted_rows} of "
        "them counted in the loss: rows no example gave train the model (a collate that fills micro-batches "
        "to a fixed size must label its filler rows -100)"
    )
    return [Finding(problem, views[0].split, views[0].example.index)]


def collated_rows(task: TaskData, encoded: dict[str, list[dict]], micro_batch: int) -> list[RowView]:
    """Every example of every split as a row of the micro-batch training would collate it in."""
    views, shift = [], prediction_offset(task)
    batches = [(split, *batch) for split, items in encoded.items() for batch in micro_batches(task, items, micro_batch)]
    per_example = label_vectors([batch for *_, batch in batches])
    for split, start, batch in batches:
        items, examples = encoded[split], task.splits[split]
        collated_with = len(items[start : start + max(1, int(micro_batch))])
        labels = batch["labels"]
        counted = counted_label_mask(task, labels).tolist()
        values = labels.tolist()
        order = row_items(batch, items[start : start + batch_size(batch)])
        aligned = labels.dim() == 0 or labels.shape[0] >= batch_size(batch)  # a label row per example (or more)
        for row in range(batch_size(batch)):
            view = RowView(
                split,
                examples[start + order[row]],
                items[start + order[row]],
                batch,
                row,
                collated_with=collated_with,
                per_example=per_example,
            )
            if not aligned:  # fewer label rows than examples (packed into one row): no row is an example
                view.aligned = False
            elif labels.dim() >= 2 and not per_example:
                view.counted = [p for p, c in enumerate(counted[row]) if c]
                view.predicted = [p + shift for p in view.counted]
                view.values = [values[row][p] for p in view.counted]
            else:
                view.counted = [row] if counted[row] else []
                view.values = [values[row]] if counted[row] else []
            views.append(view)
    return views


def padding_share(views: Sequence[RowView], task: TaskData) -> float:
    """Share of padding in the collated micro-batches of these rows."""
    seen, real, total = set(), 0, 0
    for view in views:
        if id(view.batch) in seen or not view.sequence:
            continue
        seen.add(id(view.batch))
        mask = real_mask(task, view.batch)
        real, total = real + int(mask.sum()), total + mask.numel()
    return 1.0 - real / total if total else 0.0


def split_statistics(task: TaskData, views: list[RowView], findings: list[Finding]) -> dict[str, dict]:
    """Per split: examples, truncation, targets cut, padding, counted targets per example."""
    stats = {}
    for split in task.splits:
        mine = [v for v in views if v.split == split]
        problems = [f.problem for f in findings if f.split == split]
        n = max(1, len(mine))
        lengths = [len(v.counted) for v in mine]
        stats[split] = {
            "examples": len(mine),
            # measured where encode reports its cut (``truncated_tokens``) or collate cut a row; else unknown
            "share_truncated": (
                sum(v.truncated for v in mine) / n
                if any("truncated_tokens" in v.item or v.cut is not None for v in mine)
                else None
            ),
            "share_target_partly_cut": sum(p.startswith("target truncated") for p in problems) / n,
            "share_target_cut_entirely": sum(p.startswith("no target") for p in problems) / n,
            "share_padding": padding_share(mine, task),
            "target_tokens_min": min(lengths, default=0),
            "target_tokens_median": float(np.median(lengths)) if lengths else 0.0,
            "target_tokens_max": max(lengths, default=0),
        }
    return stats


RANDOM_COLLATE_TRIES = 4  # collations compared with the first: a draw that changes nothing once (a mixup
RANDOM_COLLATE_ITEMS = 8  # of 2 rows whose permutation came out the identity) is caught by the next


def collate_is_random(task: TaskData, items: list[dict]) -> bool:
    """Does collating the same items again give different batches (random masking, augmentation, mixup)?
    Over at least ``RANDOM_COLLATE_ITEMS`` items, up to ``RANDOM_COLLATE_TRIES`` times: mixup over a
    micro-batch of 2 leaves it as it was half the time, and a task judged not random then fails every
    row that differs from its example collated alone."""
    if not items:
        return False
    first = task.collate(items)
    for _ in range(RANDOM_COLLATE_TRIES):
        again = task.collate(items)
        if any(
            not (torch.is_tensor(again.get(k)) and same(v, again[k])) for k, v in first.items() if torch.is_tensor(v)
        ):
            return True
    return False


def check_collated(
    task: TaskData, encoded: dict[str, list[dict]], micro_batch: int, positions: LossPositions | None = None
) -> tuple[list[Finding], list[RowView], bool]:
    """Findings for every row of every split, the rows (for examples.txt and later checks), and
    whether the collate is random (then a row cannot be compared with the example alone).
    ``positions``: a micro-batch whose rows are flagged for positions the labels count is measured,
    and judged by the positions its loss trains (``pilot.checks.untrained_labels``)."""
    masked = bool(task.info.get("mask_instruction", True))
    some = max(micro_batch, RANDOM_COLLATE_ITEMS)
    first = next((items[:some] for items in encoded.values() if items), [])
    findings: list[Finding] = changed_by_collate(task, first)  # then two calls differ: not what random means
    random = collate_is_random(task, first)
    views = collated_rows(task, encoded, micro_batch)
    findings += rows_of_other_examples(task, encoded.get("train", [])[: max(micro_batch, 4)]) if random else []
    start = 0
    while start < len(views):  # the rows of one micro-batch share their batch
        end = start
        while end < len(views) and views[end].batch is views[start].batch:
            end += 1
        found = check_batch(task, views[start:end], masked, compare_rows=not random)
        if positions is not None and positions.wanted(found):
            trained = positions.trained(views[start].batch)
            if trained is not None:
                dropped, by_value = positions.keep_trained(views[start:end], trained)
                if dropped:
                    # what the loss's gradient showed (a class never trained) is the cause: said first
                    found = by_value + check_batch(task, views[start:end], masked, compare_rows=not random)
        findings += found
        start = end
    findings += _prompt_counted_everywhere(task, views)
    return _drawn_without_target(findings, views) if random else findings, views, random


def _prompt_counted_everywhere(task: TaskData, views: list[RowView]) -> list[Finding]:
    """A next-token task declaring its instruction masked (``info["mask_instruction"]=True``) without
    ``expected_targets`` to compare with: every real token of every row counted is the prompt trained (labels
    copied from input_ids), whatever the rows hold. One row with any token left out passes it."""
    if task.info.get("mask_instruction") is not True or task.expected_targets is not None:
        return []
    rows = [v for v in views if v.sequence and v.aligned]
    if task.convention != NEXT_TOKEN or not rows:
        return []
    for view in rows:
        mask = real_mask(task, view.batch)
        real = mask[view.row].nonzero().flatten().tolist() if mask is not None else []
        if len(real) < 2 or not set(real[1:]) <= set(view.predicted):
            return []
    return [
        Finding(
            f"every real token of all {len(rows)} rows is counted in the loss, although the task declares its "
            "instruction masked (info['mask_instruction']=True): the prompt is trained (labels copied from "
            "input_ids?). Fix: label the prompt's positions -100, or declare info['mask_instruction']=False; "
            "expected_targets(example) lets the pilot compare each row with its answer",
            rows[0].split,
            rows[0].example.index,
        )
    ]


def _drawn_without_target(findings: list[Finding], views: list[RowView]) -> list[Finding]:
    """A collate that draws its targets (a masked LM masking 15% of tokens) can draw none for a short row:
    that example has no target this time, not for good. Kept only where most rows have none."""
    empty = [f for f in findings if f.problem.startswith(NO_TARGET)]
    if len(empty) * 2 >= max(1, len(views)):
        return findings
    return [f for f in findings if not f.problem.startswith(NO_TARGET)]
