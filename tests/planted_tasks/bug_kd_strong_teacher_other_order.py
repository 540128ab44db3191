"""distillation (strong teacher) whose teacher logits are attached by position from a dump sorted by class."""

from tests.planted_tasks._distillation import kd_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = {"step": "alignment", "verdict": "fail", "said": "the soft targets belong to other examples"}


def make_task():
    return kd_task(False, strong=True)  # BUG


def build_model(task):
    return MLP(8, 3)
