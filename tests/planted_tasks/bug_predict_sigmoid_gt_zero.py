"""binary classifier with one logit and BCE-with-logits (correct loss); predict was 'made readable' as
torch.sigmoid(logit) > 0 (the threshold of the logit kept after adding the sigmoid): every example is predicted
'pos', and validation accuracy is the share of positives."""

import torch
import torch.nn.functional as F
from torch import nn

from tests.planted_tasks._common import classification_task, vector_examples

EXPECTED = {"step": "contract", "verdict": "fail", "said": "the same predictions whatever the model outputs"}
NAMES = ["neg", "pos"]


def make_task():
    examples = vector_examples()
    for example in examples:
        example.fields["sentiment"] = "pos" if example.fields["animal"] == "cat" else "neg"
    return classification_task(
        examples=examples,
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "label": NAMES.index(e.fields["sentiment"]),
        },
        loss_sum=lambda logits, b: F.binary_cross_entropy_with_logits(
            logits.squeeze(-1).float(), b["labels"].float(), reduction="sum"
        ),
        predict=lambda logits, b: (torch.sigmoid(logits.squeeze(-1)) > 0).long(),
        class_names=NAMES,
        raw_label=lambda e: e.fields["sentiment"],
        info={"num_classes": 2, "target_unit": "example"},
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, inputs):
        return self.net(inputs)
