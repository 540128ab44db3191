"""correct: BertForSequenceClassification(num_labels=1) as a regressor, float scores as labels, the model's own loss
(problem_type inferred 'regression': MSE, a mean over the rows) turned into a sum by x rows; predict = logits[:, 0]."""

import torch

from pilot.data.task import TaskData
from tests.planted_tasks import _bert_scored_sentences as x

EXPECTED = None


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
        loss_sum=lambda out, b: out.loss * b["labels"].numel(),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.logits[:, 0],
        correct_count=lambda out, b: ((out.logits[:, 0] - b["labels"]).abs() < 0.1).sum(),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        info={"target_unit": "example", "pad_id": x.tok().pad_token_id, "padding_side": "right"},
    )


def build_model(task):
    return x.bert_seqcls(1)
