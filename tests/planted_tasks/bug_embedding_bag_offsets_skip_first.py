"""nn.EmbeddingBag's offsets computed as [0] + cumsum(lengths[1:]) instead of [0] + cumsum(lengths[:-1]): each
review's bag starts where another review's length says, so reviews are read cut or merged with their
neighbours."""

from tests.planted_tasks._embedding_bags import BagNet, task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "'flat_ids' from its 'offsets'"}


def make_task():
    return task("skips_first")


def build_model(task):
    return BagNet()
