"""an encoder-decoder whose encode reads the source under a key the examples do not have
(``fields.get("source", "")``: they hold "instruction"), so every encoder input is the same prompt. The decoder
learns the answers' own distribution from its teacher-forced prefix and the tiny subset's floor, read from that
prefix, is met (an outside examination's T5 version of it, 2026-12-07, passed every check). Its twin: ok_seq2seq."""

import torch

from tests.planted_tasks import ok_seq2seq as base

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "every training example reaches the model as the same input"}


def encode(example):
    encoded = base.encode(example)
    prompt = "translate: " + example.fields.get("source", "")  # the field is "instruction"
    return {**encoded, "source": torch.tensor(base.tok.encode(prompt))}


def make_task():
    task = base.make_task()
    task.encode = encode
    return task


def build_model(task):
    return base.Model()
