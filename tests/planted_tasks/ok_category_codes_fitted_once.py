"""correct: the plan column coded by one mapping fitted on the training split, applied to every split."""

from tests.planted_tasks import _plan_codes

EXPECTED = None


def make_task():
    return _plan_codes.make_task(per_split=False)


def build_model(task):
    return _plan_codes.PlanNet()
