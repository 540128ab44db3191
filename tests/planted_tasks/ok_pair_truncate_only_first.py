"""correct: sentence-pair classification (BERT) with truncation='only_first': the premise is cut so the row fits
MAX_LEN while the (short) hypothesis and every separator stay whole; many rows end up exactly MAX_LEN long."""

from tests.planted_tasks import _sentence_pairs as _pairs

EXPECTED = None


def truncate(a, b, bos, eos):
    a = a[: max(0, _pairs.MAX_LEN - len(b) - 4)]
    ids = [bos] + a + [eos, eos] + b + [eos]
    return ids, [0] * (len(a) + 3) + [1] * (len(b) + 1)


def make_task():
    return _pairs.task(truncate)


def build_model(task):
    return _pairs.build()
