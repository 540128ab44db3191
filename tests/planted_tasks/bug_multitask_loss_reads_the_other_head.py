"""multi-task classification: the model returns this task's 3-class head as "logits" beside a 5-class head of
another task ("topic_logits"); loss_sum and predict, copied from that task's code, read "topic_logits", so this
task's own head never trains; every check passed (an outside examination: the initial loss was judged
against ln(5) for a 3-class task)."""

import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks._common import FEATURES, classification_task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "another head's output"}


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.animal, self.topic = nn.Linear(32, 3), nn.Linear(32, 5)

    def forward(self, inputs):
        hidden = self.body(inputs)
        return {"logits": self.animal(hidden), "topic_logits": self.topic(hidden)}


def make_task():
    return classification_task(
        loss_sum=lambda out, batch: F.cross_entropy(out["topic_logits"], batch["labels"], reduction="sum"),
        predict=lambda out, batch: out["topic_logits"].argmax(-1),
    )


def build_model(task):
    return TwoHeads()
