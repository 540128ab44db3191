"""correct: multi-label tags with a config-built BertForSequenceClassification(num_labels=3,
problem_type='multi_label_classification'), float multi-hot labels, the model's BCE (a mean over B x 3) x numel."""

import torch
import transformers

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks._bert_bpe import sentences

EXPECTED = None
TAGS = ["has_ba", "has_ko", "long"]


def tags(s):
    return [float("ba" in s), float("ko" in s), float(len(s.split()) >= 5)]


def encode(e):
    x = h.cls_encode(Example(e.index, e.group, {"text": e.fields["text"], "size": "short"}))
    return {**x, "label": e.fields["tags"]}


def collate(items):
    b = h.cls_collate(items)
    b["labels"] = torch.tensor([i["label"] for i in items], dtype=torch.float)
    return b


def make_task():
    ex = [
        Example(i, f"m{i}", {"text": s, "tags": tags(s)}) for i, s in enumerate(sentences(150, seed=8, low=2, high=8))
    ]
    return TaskData(
        kind="multilabel",
        splits=make_splits(ex, h.SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: out.loss * b["labels"].numel(),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: (out.logits > 0).float(),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        info={"target_unit": "tag", "pad_id": h.cls_tok().pad_token_id},
    )


def build_model(task):
    torch.manual_seed(0)
    t = h.cls_tok()
    cfg = transformers.BertConfig(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=128,
        pad_token_id=t.pad_token_id,
        num_labels=3,
        problem_type="multi_label_classification",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return transformers.BertForSequenceClassification(cfg)
