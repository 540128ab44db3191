"""sequence classifier with a hand-written attention layer: collate stores attention_mask as uint8 ('saves memory',
1 = real token) and the model builds its key padding mask as (~attention_mask).bool(): on uint8, ~1 = 254 and
~0 = 255, both True, so EVERY key is filled with -1e4: attention is uniform over all positions, padding included.
(On a bool mask, ~ would have been right; no NaN appears, the loss trains.)"""

import math

import torch
import torch.nn as nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import pad_collate_sentences, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    b = pad_collate_sentences(items)
    b["attention_mask"] = b["attention_mask"].to(torch.uint8)
    return b


def make_task():
    return seqcls_task(collate=collate)


class Model(nn.Module):
    def __init__(self, width=32, classes=2):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        pad = (~attention_mask).bool()  # True = padding
        scores = scores.masked_fill(pad[:, None, :], -1e4)
        h = x + self.out(scores.softmax(-1) @ v)
        m = attention_mask.unsqueeze(-1).float()
        return self.head((h * m).sum(1) / m.sum(1).clamp(min=1))
