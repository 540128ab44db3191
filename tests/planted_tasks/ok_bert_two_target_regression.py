"""correct: multi-output regression with BertForSequenceClassification(num_labels=2, problem_type='regression'):
float labels [B, 2] (mean word length / 4 and words / 8), MSE summed over both outputs, target_count = B x 2."""

import torch
import torch.nn.functional as F

from pilot.data.task import TaskData
from tests.planted_tasks import _bert_scored_sentences as x

EXPECTED = None


def targets(e):
    w = e.fields["text"].split()
    return [sum(len(a) for a in w) / len(w) / 4, len(w) / 8]


def collate(items):
    ids = x.pad_rows(items)
    return {
        "input_ids": ids,
        "attention_mask": (ids != x.tok().pad_token_id).long(),
        "labels": torch.tensor([i["y"] for i in items], dtype=torch.float32),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return TaskData(
        kind="regression",
        splits=x.splits(x.scored_examples()),
        encode=lambda e: x.encode_text(e, y=targets(e)),
        collate=collate,
        loss_sum=lambda out, b: F.mse_loss(out.logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.logits,
        correct_count=lambda out, b: ((out.logits - b["labels"]).abs() < 0.1).sum(),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        info={"target_unit": "example", "pad_id": x.tok().pad_token_id, "padding_side": "right"},
    )


def build_model(task):
    return x.bert_seqcls(2, problem_type="regression")
