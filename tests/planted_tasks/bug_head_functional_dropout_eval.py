"""3-class classification: DistilBERT body + a hand-written head that applies F.dropout(pooled, 0.1) -- the functional
form defaults to training=True, so the head keeps dropping units after model.eval(): evaluation is random."""

import torch
import torch.nn.functional as F

from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks import _ner_and_pairs as c

EXPECTED = {"step": "eval_determinism", "verdict": "fail", "said": "does forward pass training=True"}
TRAINING_FLAG = None  # the bug: F.dropout(..., training=self.training) was meant


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = c.hf_model("DistilBert", "SequenceClassification", 3).distilbert
        self.head = torch.nn.Linear(32, 3)

    def forward(self, input_ids, attention_mask):
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).float()
        pooled = (hidden * m).sum(1) / m.sum(1)
        kw = {} if TRAINING_FLAG is None else {"training": self.training}
        return self.head(F.dropout(pooled, 0.1, **kw))


def make_task():
    return h.cls_task(forward=lambda m, b: m(b["input_ids"], b["attention_mask"]))


def build_model(task):
    torch.manual_seed(0)
    return Model()
