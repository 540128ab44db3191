"""correct: multiple choice as transformers' run_swag does it: the B questions' C=4 candidates flattened to
input_ids [B*C, T], one score per row, viewed back to [B, C] in forward; labels [B] = index of the right one."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import TaskData
from tests.planted_tasks._bert_bpe import pad2
from tests.planted_tasks.ok_multiple_choice import CHOICES, Scorer, examples


def encode(e):
    rows = [tok.encode(f"{e.fields['question']}|{o}") for o in e.fields["options"]]
    return {"index": e.index, "rows": rows, "label": e.fields["answer"]}


def collate(items):
    ids = pad2([r for i in items for r in i["rows"]], tok.PAD_ID)
    return {
        "input_ids": ids,
        "attention_mask": (ids != tok.PAD_ID).long(),
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


EXPECTED = None


class FlatScorer(Scorer):
    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        h = self.encoder(
            self.embed(input_ids) + self.position(torch.arange(n)), src_key_padding_mask=attention_mask == 0
        )
        m = attention_mask.unsqueeze(-1).float()
        return self.score((h * m).sum(1) / m.sum(1).clamp(min=1)).view(-1, CHOICES)


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
    return FlatScorer()
