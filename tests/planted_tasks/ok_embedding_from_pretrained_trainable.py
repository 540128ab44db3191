"""correct: a bag-of-embeddings classifier whose random init table is built with
nn.Embedding.from_pretrained(..., freeze=False): the embeddings train."""

from tests.planted_tasks._word_bags import SETTINGS, Model, make_task, random_table

EXPECTED = None
__all__ = ["SETTINGS", "make_task"]


def build_model(task):
    return Model(random_table(), freeze=False)
