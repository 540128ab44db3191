"""correct: per-example reliability weights looked up by example index; loss sum(w CE), count sum(w)."""

from tests.planted_tasks._sample_weights import sw_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = None


def make_task():
    return sw_task(True)


def build_model(task):
    return MLP(8, 3)
