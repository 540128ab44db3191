"""distillation whose teacher logits are attached by position from a teacher dump written in another order (sorted
by class): ~2/3 of the examples are distilled towards another example's teacher output (mostly another class)."""

from tests.planted_tasks._distillation import kd_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = {"step": "alignment", "verdict": "fail", "said": "the soft targets belong to other examples"}


def make_task():
    return kd_task(False)  # BUG


def build_model(task):
    return MLP(8, 3)
