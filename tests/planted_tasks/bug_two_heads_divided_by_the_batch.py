"""two heads, each head's term a target (as ok_two_heads_each_a_target), and loss_sum divided by the
micro-batch's examples as a mean would be: the start is far below (ln 3 + ln 3) / 2 per target."""

from tests.planted_tasks._two_heads import Model, task

EXPECTED = {"step": "objective", "verdict": "warn", "said": "each head's term a target"}


def make_task():
    return task(divided_by=8)


def build_model(task):
    return Model()
