"""correct: token classification (tagging), right padding, labels -100 on padding, bidirectional encoder."""

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = None
SETTINGS = {
    **EVERY_CHECK,
    "tiny_overrides": ["optim.lr=3e-3"],
}


def make_task():
    return tagging_task()


def build_model(task):
    return Tagger()
