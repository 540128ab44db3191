"""in-batch contrastive retrieval: the collate sorts the queries by length (less padding) but builds the
documents in the original order, labels = arange(B): row i's 'positive' is another example's document."""

from tests.planted_tasks._contrastive_pairs import DualEncoder, collate_sorted_queries, task

EXPECTED = {"step": "inspect", "verdict": "fail"}
SETTINGS = {"micro_batch": 8}


def make_task():
    return task(collate_sorted_queries)


def build_model(task):
    return DualEncoder()
