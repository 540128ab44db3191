"""shared: a sentence-embedding bi-encoder (one transformer encoder for queries and passages, given each
sequence's padding mask), in-batch InfoNCE over [B, B] scores; a query is a word, its passage the word
reversed, padded by collate to the batch's longest."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words
from tests.planted_tasks.ok_contrastive_in_batch import collate


class BiEncoder(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.position = nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def pool(self, hidden, mask):
        m = mask.unsqueeze(-1).float()
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1)

    def encode(self, ids, mask):
        positions = torch.arange(ids.shape[1], device=ids.device)
        hidden = self.encoder(self.embed(ids) + self.position(positions), src_key_padding_mask=mask == 0)
        return F.normalize(self.pool(hidden, mask), dim=-1)

    def forward(self, q, qm, d, dm):
        return self.encode(q, qm) @ self.encode(d, dm).T / 0.05


def make_task():
    ex = [Example(index=i, group=f"w{i}", fields={"query": w, "doc": w[::-1]}) for i, w in enumerate(words(120, 9))]
    return TaskData(
        kind="retrieval",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "q": tok.encode(e.fields["query"]), "d": tok.encode(e.fields["doc"])},
        collate=collate,
        loss_sum=lambda scores, b: F.cross_entropy(scores.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda scores, b: scores.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["doc_ids"], b["doc_mask"]),
        info={"target_unit": "example", "pad_id": tok.PAD_ID, "in_batch_negatives": True},
        initial_loss_tolerance=None,
    )
