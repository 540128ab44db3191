"""BertForSequenceClassification(num_labels=1) as a regressor (the HF recipe), but loss_sum is written by hand as
F.mse_loss(out.logits, labels, reduction='sum'): logits are [B, 1], labels [B], so the difference broadcasts to
[B, B] and every prediction is pulled towards every row's score (PyTorch only prints a UserWarning)."""

import torch
import torch.nn.functional as F

from pilot.data.task import TaskData
from tests.planted_tasks import _bert_scored_sentences as x

EXPECTED = {"step": "objective", "verdict": "fail"}


def collate(items):
    ids = x.pad_rows(items)
    return {
        "input_ids": ids,
        "attention_mask": (ids != x.tok().pad_token_id).long(),
        "labels": torch.tensor([i["score"] for i in items], dtype=torch.float32),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return TaskData(
        kind="regression",
        splits=x.splits(x.scored_examples()),
        encode=lambda e: x.encode_text(e, score=e.fields["score"]),
        collate=collate,
        loss_sum=lambda out, b: F.mse_loss(out.logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.logits.squeeze(-1),
        correct_count=lambda out, b: ((out.logits.squeeze(-1) - b["labels"]).abs() < 0.1).sum(),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        info={"target_unit": "example", "pad_id": x.tok().pad_token_id, "padding_side": "right"},
    )


def build_model(task):
    return x.bert_seqcls(1)
