"""encoder-decoder: collate feeds the decoder the labels themselves (decoder_input_ids = target + <eos>,
the '<bos> +' shift forgotten): the decoder's input at t is the token it must predict at t (teacher-forcing leak)."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks import ok_seq2seq
from tests.planted_tasks.ok_seq2seq import Model  # noqa: F401  (the correct GRU encoder-decoder)

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the answer reaches the model through"}


def encode(example):
    answer = ok_seq2seq.target(example)
    return {
        "index": example.index,
        "source": torch.tensor(tok.encode(example.fields["instruction"])),
        "decoder": torch.tensor(answer),  # the bug: should be [BOS] + answer[:-1]
        "labels": torch.tensor(answer),
    }


def make_task():
    task = ok_seq2seq.make_task()
    task.encode = encode
    return task
