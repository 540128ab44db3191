"""correct: distillation from a strong teacher (negative squared distance to class centres, ~accurate), looked up
per example; 0.9 T^2 KL + 0.1 CE. A teacher still disagrees with the hard label on a few hard examples."""

from tests.planted_tasks._distillation import kd_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = None


def make_task():
    return kd_task(True, strong=True)


def build_model(task):
    return MLP(8, 3)
