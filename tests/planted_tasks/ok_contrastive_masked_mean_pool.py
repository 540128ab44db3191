"""correct: bi-encoder with in-batch InfoNCE ([B, B] scores), the sentence embedding a mean over the real
positions only (the twin of bug_contrastive_mean_pool_counts_padding)."""

from tests.planted_tasks._pooled_pairs import BiEncoder, make_task  # noqa: F401 - make_task: the task's own

EXPECTED = None


def build_model(task):
    return BiEncoder()
