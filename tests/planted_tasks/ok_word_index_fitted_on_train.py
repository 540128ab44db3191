"""correct: one word index fitted on the training split encodes every split (unknown words to id 1)."""

from tests.planted_tasks import _word_index

EXPECTED = None


def make_task():
    return _word_index.make_task(per_split=False)


def build_model(task):
    return _word_index.BagOfWords()
