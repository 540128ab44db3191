"""tagger: nn.LSTM built without batch_first and given [batch, positions, features]: it runs over the batch as
if it were time, so each row's output depends on the rows before it. Only the first row equals the example
alone: the check of two equal rows read row 0 alone and blamed the padding (an outside examination)."""

import torch
from torch import nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "depends on the other rows of its micro-batch, padding aside"}


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width: int = 32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.lstm = nn.LSTM(width, width)  # the bug: batch_first=False
        self.head = nn.Linear(width, 3)

    def forward(self, input_ids, attention_mask):
        hidden, _ = self.lstm(self.embed(input_ids))
        return self.head(hidden)


def make_task():
    return tagging_task()


def build_model(task):
    return Model()
