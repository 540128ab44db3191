"""hand-written self-attention classifier: the padding mask is broadcast over the QUERY axis,
mask[:, None, :, None], instead of the key axis, mask[:, None, None, :]; shapes broadcast either way, so real
tokens attend to the padding keys and only padded queries are suppressed. Right padding, masked mean pooling."""

import torch
import torch.nn as nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class SelfAttentionClassifier(nn.Module):
    def __init__(self, classes=2, width=32, heads=2):
        super().__init__()
        torch.manual_seed(0)
        self.h, self.d = heads, width // heads
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask):
        B, T = input_ids.shape
        x = self.embed(input_ids) + self.position(torch.arange(T))
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / self.d**0.5  # [B, H, Tq, Tk]
        scores = scores + (1.0 - attention_mask[:, None, :, None].float()) * -1e9  # the bug: query axis
        att = scores.softmax(-1) @ v
        x = self.norm(x + self.out(att.transpose(1, 2).reshape(B, T, -1)))
        m = attention_mask.unsqueeze(-1).float()
        return self.head((x * m).sum(1) / m.sum(1))


def make_task():
    return seqcls_task()


def build_model(task):
    return SelfAttentionClassifier()
