"""collate sorts examples by length for efficiency but builds labels from the unsorted list."""

from tests.planted_tasks._common import generation_task, pad_collate, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    ordered = sorted(items, key=lambda item: -len(item["input_ids"]))
    batch = pad_collate(ordered)
    unsorted = pad_collate(items)
    batch["labels"] = unsorted["labels"]  # the bug: labels stay in the original order
    return batch


def make_task():
    return generation_task(collate=collate)


def build_model(task):
    return tiny_gpt(task)
