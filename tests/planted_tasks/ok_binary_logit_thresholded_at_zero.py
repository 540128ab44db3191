"""correct: bug_binary_logit_thresholded_at_half's classifier, its predict thresholding the logit at 0
(sigmoid(logit) > 0.5), where BCE-with-logits favours class 1."""

from tests.planted_tasks.bug_binary_logit_thresholded_at_half import Model, task

EXPECTED = None
__all__ = ["EXPECTED", "Model", "make_task"]


def make_task():
    return task(0.0)
