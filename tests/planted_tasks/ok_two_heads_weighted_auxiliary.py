"""correct: two heads, the auxiliary topic loss weighted 0.3, target_count counting each head's term (see
ok_two_heads_each_a_target): a start within the tolerance of (ln 3 + ln 3) / 2 per target."""

from tests.planted_tasks._two_heads import Model, task

EXPECTED = None


def make_task():
    return task(aux_weight=0.3)


def build_model(task):
    return Model()
