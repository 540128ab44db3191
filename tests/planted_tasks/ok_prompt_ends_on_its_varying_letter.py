"""correct: generation whose prompt ends on a token of its own that varies ("<bos>step 2 after k" -> "ll<eos>"): the
token two positions before every answer is the template's ' ', the one right before it differs from row to row, as
when an answer's first token is masked; here the answers are trained whole (no expected_targets declared)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None
LETTERS = "abcdefghijklmnopqrstuvwxy"


def examples():
    rows = [(k, c) for k in range(1, 9) for c in LETTERS]
    return [
        Example(index=i, group=c, fields={"question": f"step {k} after {c}", "answer": chr(ord(c) + 1) * k})
        for i, (k, c) in enumerate(rows)
    ]


def encode(e):
    prompt = [tok.BOS_ID] + tok.encode(e.fields["question"])
    answer = tok.encode(e.fields["answer"]) + [tok.EOS_ID]
    return {
        "index": e.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
    }


def make_task():
    return generation_task(examples(), encode=encode, expected_targets=None)


def build_model(task):
    return tiny_gpt(task)
