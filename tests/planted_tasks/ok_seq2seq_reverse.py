"""correct: seq2seq reversal task (output = source characters reversed), the copy task of ok_seq2seq_copy
with its targets reversed: decoder gets <bos> + target, labels target + <eos>."""

from tests.planted_tasks import ok_seq2seq_copy as copy

EXPECTED = None
Model = copy.Model


def make_task():
    return copy.make_task(reverse=True)
