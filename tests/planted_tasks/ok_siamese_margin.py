"""correct: siamese pair verification (same / different capture of an item) with the Hadsell contrastive margin
loss, label 1 = same (pulled together), 0 = different (pushed beyond margin 2); predict = distance < 1."""

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._siamese import Siamese, task

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return task()


def build_model(task):
    return Siamese()
