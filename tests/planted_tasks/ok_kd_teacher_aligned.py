"""correct: distillation with teacher logits looked up per example; 0.9 T^2 KL + 0.1 CE (initial_loss_tolerance None)."""

from tests.planted_tasks._distillation import kd_task
from tests.planted_tasks._small_tasks import MLP

EXPECTED = None


def make_task():
    return kd_task(True)


def build_model(task):
    return MLP(8, 3)
