"""correct: in-batch contrastive retrieval whose collate sorts the (query, document) pairs together by query
length, labels = arange(B)."""

from tests.planted_tasks._contrastive_pairs import DualEncoder, collate_sorted_pairs, task

EXPECTED = None
SETTINGS = {"micro_batch": 8}


def make_task():
    return task(collate_sorted_pairs)


def build_model(task):
    return DualEncoder()
