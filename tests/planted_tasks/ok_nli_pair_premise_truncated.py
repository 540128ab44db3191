"""correct: the NLI pair of bug_nli_pair_cut_from_the_right, truncated as truncation='only_first' does it: the
premise is cut to leave room for the whole hypothesis, so every row holds its hypothesis (and long premises
lose their end, as they should)."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks import bug_nli_pair_cut_from_the_right as pair

EXPECTED = None


def encode(e):
    second = tok.encode(" [SEP] " + e.fields["hypothesis"])
    first = tok.encode(e.fields["premise"])[: pair.MAX_LEN - len(second)]
    return {"index": e.index, "input_ids": torch.tensor(first + second), "label": pair.LABELS.index(e.fields["nli"])}


def make_task():
    task = pair.make_task()
    task.encode = encode
    return task


def build_model(task):
    return pair.build_model(task)
