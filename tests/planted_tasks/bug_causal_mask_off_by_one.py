"""custom decoder: the causal mask is built with triu(diagonal=2) instead of triu(1) (off by one): the
output at position t also attends to token t+1, exactly the token it is trained to predict."""

import torch

from tests.planted_tasks._common import TransformerLM, generation_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the model is not causal"}


class OffByOneLM(TransformerLM):
    def causal_mask(self, length):
        return torch.ones(length, length, dtype=torch.bool).triu(2)  # the bug: should be triu(1)


def make_task():
    return generation_task()


def build_model(task):
    return OffByOneLM()
