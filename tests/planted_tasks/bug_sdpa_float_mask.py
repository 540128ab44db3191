"""custom encoder: the 0/1 attention_mask is handed to F.scaled_dot_product_attention as a FLOAT mask
(mask[:, None, None, :].float()): a float attn_mask is ADDED to the scores (+1 on real keys, +0 on pads),
so padding is never masked; only a bool mask (True = attend) masks."""

import torch
import torch.nn.functional as F
from torch import nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "reads the padding"}


def make_task():
    return seqcls_task()


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width=32, heads=2, classes=2):
        super().__init__()
        torch.manual_seed(0)
        self.heads = heads
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask):
        b, t = input_ids.shape
        x = self.embed(input_ids) + self.position(torch.arange(t))
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        mask = attention_mask[:, None, None, :].to(q.dtype)  # the bug: float 0/1 is added, not a mask
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = self.norm(x + self.out(h.transpose(1, 2).reshape(b, t, -1)))
        m = attention_mask.unsqueeze(-1).to(x.dtype)
        return self.head((x * m).sum(1) / m.sum(1).clamp(min=1))


def build_model(task):
    return Model()
