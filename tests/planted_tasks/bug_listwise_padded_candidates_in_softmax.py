"""answer selection over 3-6 candidates per query, padded with zero vectors to the batch's widest: the padded
candidates' scores are not masked, so the softmax of the cross-entropy (and predict's argmax) spreads over
padding candidates too
an example's loss depends on what it is batched with."""

from tests.planted_tasks._listwise import Scorer, task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "an example's loss depends on its micro-batch"}


def make_task():
    return task(mask_padding=False)


def build_model(task):
    return Scorer()
