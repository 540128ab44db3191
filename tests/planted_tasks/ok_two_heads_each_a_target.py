"""correct: two heads (sentiment, topic) returned as a tuple, both cross-entropies summed, target_count counting
each head's term: the objective check expected ln 3 + ln 3 per target (two heads' terms in one target) and
said the start was a loss divided by the batch, and that label_smoothing (absent) held the loss near a uniform
guess (the floor was sought over the first head alone, the topic head held at its start)."""

from tests.planted_tasks._two_heads import Model, task

EXPECTED = None


def make_task():
    return task()


def build_model(task):
    return Model()
