"""per-example reliability weights taken as weight[:batch_size] (by position in the micro-batch) instead of
weight[batch['index']]: every batch reuses the first 4 examples' weights."""

from tests.planted_tasks._sample_weights import sw_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = {"step": "objective", "verdict": "fail", "said": "it is not a sum over targets"}


def make_task():
    return sw_task(False)


def build_model(task):
    return MLP(8, 3)
