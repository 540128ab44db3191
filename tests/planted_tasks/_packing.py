"""causal LM on PACKED rows: each example is a pack of 3 short documents (<bos> text <eos>),
position ids restart at every document; ``PackedLM`` takes position_ids and, when given doc_ids, a
block-diagonal causal mask (a document attends only to itself)."""

import torch
import torch.nn as nn

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import (
    TaskData,
    pad_collate,
    shifted_loss_sum,
    shifted_predict,
    shifted_target_count,
    words,
)


def packs(count=60, seed=3):
    ws = words(count * 6, seed)
    out = []
    for i in range(count):
        docs = [" ".join(ws[6 * i + 2 * d : 6 * i + 2 * d + 2]) for d in range(3)]
        out.append(Example(index=i, group=f"k{i}", fields={"docs": docs}))
    return out


def encode(example):
    ids, labels, pos, doc = [], [], [], []
    for d, text in enumerate(example.fields["docs"]):
        piece = [tok.BOS_ID] + tok.encode(text) + [tok.EOS_ID]
        ids += piece
        labels += [IGNORE_INDEX] + piece[1:]  # <bos> of each document is not a target
        pos += list(range(len(piece)))
        doc += [d] * len(piece)
    return {
        "index": example.index,
        "input_ids": torch.tensor(ids),
        "labels": torch.tensor(labels),
        "position_ids": torch.tensor(pos),
        "doc_ids": torch.tensor(doc),
    }


def collate(items):
    batch = pad_collate(items)
    width = batch["input_ids"].shape[1]
    pos = torch.zeros(len(items), width, dtype=torch.long)
    doc = torch.full((len(items), width), -1, dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        pos[r, :n], doc[r, :n] = i["position_ids"], i["doc_ids"]
    batch["position_ids"], batch["doc_ids"] = pos, doc
    return batch


def expected(example):
    out = []
    for text in example.fields["docs"]:
        out += tok.encode(text) + [tok.EOS_ID]
    return out


def packed_task(forward):
    return TaskData(
        kind="generation",
        splits=make_splits(packs(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=forward,
        expected_targets=expected,
        decode_tokens=tok.token_strings,
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "padding_side": "right",
            "mask_instruction": False,
            "target_unit": "token",
        },
    )


class PackedLM(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)
        self.heads = 2

    def forward(self, input_ids, attention_mask, position_ids, doc_ids=None):
        b, n = input_ids.shape
        x = self.embed(input_ids) + self.position(position_ids)
        blocked = torch.ones(n, n, dtype=torch.bool).triu(1).expand(b, n, n)  # True: not attended
        if doc_ids is not None:
            blocked = blocked | (doc_ids[:, :, None] != doc_ids[:, None, :])
        blocked = blocked | (attention_mask[:, None, :] == 0)
        eye = torch.eye(n, dtype=torch.bool)
        blocked = blocked & ~eye  # every query keeps itself (padding rows stay finite)
        mask = blocked.repeat_interleave(self.heads, dim=0)
        return self.head(self.encoder(x, mask=mask))
