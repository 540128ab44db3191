"""3-class BertForSequenceClassification (config-built): forward is called positionally in the order the batch dict
was built, m(input_ids, token_type_ids, attention_mask) -- but BERT's signature is (input_ids, attention_mask,
token_type_ids): the all-zero token_type_ids becomes the attention mask (every key masked alike: attention is
uniform over the row, padding included) and the 0/1 mask becomes the segment ids."""

import torch

from tests.planted_tasks import _bert_scored_sentences as x
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn"}


def collate(items):
    b = h.cls_collate(items)
    return {"input_ids": b["input_ids"], "token_type_ids": torch.zeros_like(b["input_ids"]), **b}


def make_task():
    return h.cls_task(
        collate=collate,
        forward=lambda m, b: m(b["input_ids"], b["token_type_ids"], b["attention_mask"]),
    )


def build_model(task):
    return x.bert_seqcls(3)
