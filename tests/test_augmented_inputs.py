"""Evaluation batches that a random collate would move (``pilot.checks.augmented_inputs``): rows compared
example by example, so a collate that orders its rows anew each call, every key together, moves nothing."""

import torch

from pilot.checks.augmented_inputs import augmented_inputs
from tests.planted_tasks._small_tasks import blobs, cls_task, vec_collate


def _items(task):
    return [task.encode(example) for example in task.splits["val"][:8]]


def test_rows_ordered_anew_each_call_with_their_labels_are_not_augmentation():
    calls = iter(range(100))

    def reordering(items):  # another order each call, every key together
        order = torch.randperm(len(items), generator=torch.Generator().manual_seed(next(calls)))
        return vec_collate([items[i] for i in order])

    task = cls_task(blobs(), ("low", "mid", "high"), collate=reordering)
    items = [item for item in map(task.encode, task.splits["val"]) if int(item["label"]) == 0][:8]  # one class:
    assert augmented_inputs(task, items, task.collate(items)) is None  # its labels equal in any order


def test_noise_drawn_per_call_on_the_inputs_is_said_to_augment_every_validation_batch():
    def noisy(items):
        batch = vec_collate(items)
        return {**batch, "inputs": batch["inputs"] + torch.randn_like(batch["inputs"])}

    task = cls_task(blobs(), ("low", "mid", "high"), collate=noisy)
    items = _items(task)
    assert "every validation batch is augmented too" in augmented_inputs(task, items, task.collate(items))
