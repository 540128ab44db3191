"""multiple choice (4 candidates per question): collate flattens the candidates CHOICE-major ('for c in range(4):
for item in items', the loop over the ending0..ending3 columns) into [B*4, T], while the model reshapes its
[B*4] scores with .view(B, 4) (example-major): with more than one example per micro-batch, row b's 4 logits are
scores of other examples' candidates."""

import dataclasses

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks import ok_multiple_choice as mc

EXPECTED = {"step": "inspect", "verdict": "fail"}
CHOICES = mc.CHOICES


def collate(items):
    rows = [i["rows"][c] for c in range(CHOICES) for i in items]  # choice-major
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, r in enumerate(rows):
        ids[k, : len(r)], mask[k, : len(r)] = torch.tensor(r), 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


class Model(mc.Scorer):
    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[0] // CHOICES
        return super().forward(input_ids.view(n, CHOICES, -1), attention_mask.view(n, CHOICES, -1))


def make_task():
    return dataclasses.replace(mc.make_task(), collate=collate)
