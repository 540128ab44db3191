"""correct twin of bug_collate_shuffles_the_list_after_labels: collate shuffles the list of items in place
first, then reads every key from it: rows permuted together, each input with its own label. The list it is
given is reordered; the items in it are not changed."""

import random

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task, vec_collate

EXPECTED = None


def collate(items):
    random.shuffle(items)
    return vec_collate(items)


def make_task():
    return cls_task(blobs(), ("low", "mid", "high"), collate=collate)


def build_model(task):
    return MLP()
