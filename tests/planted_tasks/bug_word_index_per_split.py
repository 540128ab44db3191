"""A word index fitted on each split's own rows (ids by frequency, Keras' ``fit_on_texts`` per data frame):
validation's ids index training's embeddings at other words. Token frequencies by rank look alike in every
split, so the token skew check stays silent (an outside examination's miss); decoded, the ids are other words."""

from tests.planted_tasks import _word_index

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "decode to other words than its text"}


def make_task():
    return _word_index.make_task(per_split=True)


def build_model(task):
    return _word_index.BagOfWords()
