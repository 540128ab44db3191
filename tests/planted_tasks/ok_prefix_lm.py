"""correct: a prefix LM (T5/GLM/UniLM style): attention is bidirectional INSIDE the prompt and causal on the answer
(each answer token sees the whole prompt and the answer tokens before it); only the answer is trained, the shift
in loss_sum. No counted output reads a token at or after the one it predicts."""

import torch
from torch import nn

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task

EXPECTED = None


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 64), nn.GELU(), nn.Linear(64, width))
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def forward(self, input_ids, attention_mask, prefix_len):
        n = input_ids.shape[1]
        x = self.embed(input_ids) + self.position(torch.arange(n))
        q, k = torch.arange(n)[None, :, None], torch.arange(n)[None, None, :]
        # allowed: k <= q (causal) or both inside the prefix (bidirectional prompt)
        allowed = (k <= q) | ((q < prefix_len[:, None, None]) & (k < prefix_len[:, None, None]))
        allowed = allowed & attention_mask.bool()[:, None, :]
        allowed = allowed | torch.eye(n, dtype=torch.bool)[None]  # every row attends to itself at least
        blocked = (~allowed).repeat_interleave(2, dim=0)
        h, _ = self.attn(x, x, x, attn_mask=blocked, need_weights=False)
        h = x + h
        return self.head(h + self.mlp(h))


def prefix_collate(items):
    from tests.planted_tasks._common import pad_collate

    batch = pad_collate(items)
    batch["prefix_len"] = torch.tensor([int((i["labels"] == IGNORE_INDEX).sum()) for i in items])
    return batch


def make_task():
    return generation_task(
        collate=prefix_collate, forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["prefix_len"])
    )


def build_model(task):
    return Model()
