"""Targets that are the input token at their own position (a masked LM's labels taken after the masking).

A task whose output at position t is trained towards a label at t (``same_position``: a masked LM, a
tagger) must not find that label in its input at t: the model then learns to copy its input, the loss falls
to zero at once, and nothing is learned. A masked LM whose collate clones the labels *after* it wrote
``<mask>`` into the inputs trains every target towards ``<mask>`` itself; in a correct one a target equals
its input token only where the token was kept unmasked (about 10% of targets), and a spelling or grammar
corrector trained per position changes some of its targets (it is not judged while even one differs). A
next-token task's labels
equal its inputs by design (the loss shifts them): not judged. Read from the data alone, as training
collates it.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import input_ids_of, micro_batches
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData

ROWS = 256  # first training examples read
MIN_TARGETS = 16
SHARE = 1.0  # every counted target equal to its input token: a corrector that fixes a rare typo keeps a few apart


def copied_target_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    if task.convention == NEXT_TOKEN or not encoded:
        return [], {}
    if denoising(task):
        return noised_target_findings(task, encoded, micro_batch)
    counted = same = 0
    for _, batch in micro_batches(task, encoded[:ROWS], max(1, micro_batch)):
        labels, ids = batch.get("labels"), input_ids_of(batch)
        if not (torch.is_tensor(labels) and torch.is_tensor(ids)) or labels.is_floating_point():
            return [], {"judged": False, "why": "no integer labels beside input_ids"}
        if labels.shape != ids.shape or labels.dim() != 2:
            return [], {"judged": False, "why": "labels and input_ids of different shapes"}
        targets = (labels != IGNORE_INDEX) & (labels >= 0)
        counted += int(targets.sum())
        same += int((labels == ids)[targets].sum())
    details = {"targets": counted, "equal_to_their_input_token": same}
    if counted < MIN_TARGETS or same < SHARE * counted:
        return [], details
    return [
        Finding(
            f"{same} of {counted} targets are the input token at their own position (the output at t is trained "
            "towards the token the model reads at t): it learns to copy its input, the loss falls at once and "
            "nothing is learned — in a masked LM, labels taken from the inputs after <mask> was written into them. "
            "Fix: take the labels before masking the inputs (labels = input_ids.clone() first)"
        )
    ], details


def denoising(task: TaskData) -> bool:
    """The task says it restores corrupted inputs (its kind, or ``info["denoising"]``): its targets must not be
    its inputs (a plain autoencoder's are, by design: not judged)."""
    return "denois" in str(getattr(task, "kind", "")).lower() or bool(
        (getattr(task, "info", None) or {}).get("denoising")
    )


def noised_target_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    """A denoising task whose float targets equal one of its inputs exactly, in every batch read: the noise
    was applied to the target too (augmentation before the target was copied), and the model learns the
    identity, its loss near 0 from the start."""
    equal: dict[str, int] = {}
    batches = 0
    for _, batch in micro_batches(task, encoded[:ROWS], max(1, micro_batch)):
        labels, batches = batch.get("labels"), batches + 1
        if not torch.is_tensor(labels) or not labels.is_floating_point():
            return [], {"judged": False, "why": "no float targets"}
        for key, value in batch.items():
            if (
                key != "labels"
                and torch.is_tensor(value)
                and value.shape == labels.shape
                and torch.equal(value, labels)
            ):
                equal[key] = equal.get(key, 0) + 1
    copied = [key for key, count in equal.items() if count == batches]
    details = {"denoising": True, "targets_equal_to": copied, "batches": batches}
    if not copied or batches == 0:
        return [], details
    return [
        Finding(
            f"a denoising task whose targets equal its input batch[{copied[0]!r}] value for value in all {batches} "
            "batches read: the corruption reaches the target too, so the model learns the identity and restores "
            "nothing. Fix: the clean example as the target, the noise applied to the input alone (after the "
            "target is taken)"
        )
    ], details
