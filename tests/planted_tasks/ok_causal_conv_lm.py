"""correct: a language model of two causal convolutions (kernel 3, each padded on the left only): its
output at a position reads the last 5 tokens, no further. Its tiny subset cannot be recovered under a rule
that takes every target's whole prefix as its context (two sentences sharing 5 tokens before different
next tokens), and it failed: the loss fell 276x towards a floor counted for whole prefixes, 75% of 8
examples recovered. The model's own reach is measured (pilot.checks.context_reach)."""

import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import lm_task

EXPECTED = None
KERNEL = 3


class CausalConvLM(nn.Module):
    def __init__(self, vocab: int, width: int = 48, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.convs = nn.ModuleList([nn.Conv1d(width, width, KERNEL) for _ in range(layers)])
        self.head = nn.Linear(width, vocab)

    def forward(self, input_ids):
        x = self.embed(input_ids).transpose(1, 2)
        for conv in self.convs:  # left padding only: position t reads t - 2 .. t
            x = x + F.gelu(conv(F.pad(x, (KERNEL - 1, 0))))
        return self.head(x.transpose(1, 2))


def make_task():
    return lm_task(forward=lambda model, batch: model(batch["input_ids"]))  # right padding: never read


def build_model(task):
    return CausalConvLM(tok.VOCAB_SIZE)
