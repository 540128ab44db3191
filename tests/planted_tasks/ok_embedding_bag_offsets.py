"""correct: reviews as nn.EmbeddingBag reads them, one flat tensor of word ids and each review's start in it
(`offsets`): a row's offset depends on the reviews before it by design (an outside examination, 2026-12-07:
inspect failed it, "'offsets' differs from the example collated alone")."""

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._embedding_bags import BagNet, task

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=1e-2"]}


def make_task():
    return task("exclusive")


def build_model(task):
    return BagNet()
