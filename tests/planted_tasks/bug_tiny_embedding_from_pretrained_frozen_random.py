"""a bag-of-embeddings classifier whose table is built with nn.Embedding.from_pretrained on a random init
matrix (copied from a GloVe notebook, the vectors never loaded): from_pretrained freezes by default, the
embeddings stay random and the tiny subset is not learnt; the failure named no cause (an outside examination)."""

from tests.planted_tasks._word_bags import SETTINGS, Model, make_task, random_table

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "freeze=False"}
__all__ = ["SETTINGS", "make_task"]


def build_model(task):
    return Model(random_table())  # the bug: freeze=True by default
