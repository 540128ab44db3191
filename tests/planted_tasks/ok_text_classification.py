"""correct: sequence classification, masked mean pooling, right padding."""

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = None
SETTINGS = {
    **EVERY_CHECK,
    "tiny_overrides": ["optim.lr=3e-3"],
}


def make_task():
    return seqcls_task()


def build_model(task):
    return MeanPoolClassifier()
