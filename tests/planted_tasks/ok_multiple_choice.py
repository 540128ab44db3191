"""correct: multiple choice (4 candidate words per question, one is the reverse of the question's word):
input [B, 4, T], a scoring head gives [B, 4] logits, label = index of the right choice; choices are
shuffled BEFORE the label is computed."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words

EXPECTED = None
CHOICES = 4


def examples():
    ws = words(200, seed=5)
    rng = np.random.default_rng(5)
    out = []
    for i in range(120):
        w = ws[i]
        wrong = [ws[int(j)][::-1] for j in rng.choice(np.arange(120, 200), CHOICES - 1, replace=False)]
        options = [w[::-1]] + wrong
        order = rng.permutation(CHOICES)
        options = [options[k] for k in order]
        out.append(
            Example(
                index=i, group=f"q{i}", fields={"question": w, "options": options, "answer": options.index(w[::-1])}
            )
        )
    return out


def encode(e):
    rows = [tok.encode(f"{e.fields['question']}|{o}") for o in e.fields["options"]]
    return {"index": e.index, "rows": rows, "label": e.fields["answer"]}


def collate(items):
    width = max(len(r) for i in items for r in i["rows"])
    ids = torch.full((len(items), CHOICES, width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), CHOICES, width), dtype=torch.long)
    for b, i in enumerate(items):
        for c, r in enumerate(i["rows"]):
            ids[b, c, : len(r)], mask[b, c, : len(r)] = torch.tensor(r), 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


class Scorer(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.score = nn.Linear(width, 1)

    def forward(self, input_ids, attention_mask):
        b, c, n = input_ids.shape
        ids, mask = input_ids.view(b * c, n), attention_mask.view(b * c, n)
        h = self.encoder(self.embed(ids) + self.position(torch.arange(n)), src_key_padding_mask=mask == 0)
        m = mask.unsqueeze(-1).float()
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1)
        return self.score(pooled).view(b, c)


def make_task():
    return TaskData(
        kind="multiple_choice",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"]),
        info={"num_classes": CHOICES, "target_unit": "example", "pad_id": tok.PAD_ID},
    )


def build_model(task):
    return Scorer()
