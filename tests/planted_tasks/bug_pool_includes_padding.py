"""sequence classifier: mean pooling over every position, padding included (mask ignored in the pool)."""

from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class Model(MeanPoolClassifier):
    def pool(self, hidden, attention_mask):
        return hidden.mean(1)  # the bug


def make_task():
    return seqcls_task()


def build_model(task):
    return Model()
