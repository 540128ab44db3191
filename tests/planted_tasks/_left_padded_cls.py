"""shared: 3-class sentence length classification (short/medium/long) with a BERT encoder (config-built BertModel)
and a linear head on ONE pooled position; batches LEFT-padded (the tokenizer's padding_side='left', set for
generation elsewhere in the project, reused here), with position_ids = cumsum(mask) - 1."""

import torch
import torch.nn as nn
import transformers

from tests.planted_tasks import _hf_tiny as h


def collate(items):
    b = h.cls_collate(items, side="left")
    b["position_ids"] = (b["attention_mask"].cumsum(-1) - 1).clamp(min=0)  # real tokens numbered from 0
    return b


def task():
    return h.cls_task(collate=collate, forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["position_ids"]))


class Pooled(nn.Module):
    def __init__(self, pool):
        super().__init__()
        torch.manual_seed(0)
        t = h.cls_tok()
        cfg = transformers.BertConfig(
            vocab_size=len(t),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=130,
            pad_token_id=t.pad_token_id,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        self.bert, self.head, self.pool = transformers.BertModel(cfg, add_pooling_layer=False), nn.Linear(32, 3), pool

    def forward(self, input_ids, attention_mask, position_ids):
        hidden = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids
        ).last_hidden_state
        return self.head(self.pool(hidden, attention_mask))
