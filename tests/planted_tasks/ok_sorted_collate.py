"""correct: instruction generation whose collate sorts the rows by length (longest first) and keeps
input_ids, labels, mask and index together; plus a learned temperature scalar on the logits (init 1)."""

import torch
import torch.nn as nn

from tests.planted_tasks._common import generation_task, pad_collate, tiny_gpt

EXPECTED = None


def collate(items):
    return pad_collate(sorted(items, key=lambda item: -len(item["input_ids"])))


class Scaled(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.log_scale = nn.Parameter(torch.zeros(()))

    def forward(self, input_ids, attention_mask=None):
        return self.inner(input_ids, attention_mask=attention_mask) * self.log_scale.exp()


def make_task():
    return generation_task(collate=collate)


def build_model(task):
    return Scaled(tiny_gpt(task))
