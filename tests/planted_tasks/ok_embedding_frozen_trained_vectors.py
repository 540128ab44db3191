"""correct: a bag-of-embeddings classifier over frozen word vectors that were trained (loaded, carrying the
words' sentiment): freezing them is a choice, and the head learns on top of them."""

from tests.planted_tasks._word_bags import SETTINGS, Model, make_task, trained_table

EXPECTED = None
__all__ = ["SETTINGS", "make_task"]


def build_model(task):
    return Model(trained_table())  # frozen on purpose
