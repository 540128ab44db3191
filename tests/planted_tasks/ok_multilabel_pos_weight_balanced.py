"""correct: bug_multilabel_pos_weight_inverted's rare tags, BCE's pos_weight = negatives / positives per tag
(the rare positives weigh 4-19x)."""

from tests.planted_tasks.bug_multilabel_pos_weight_inverted import Model, task

EXPECTED = None
__all__ = ["EXPECTED", "Model", "make_task"]


def make_task():
    return task(False)
