"""binary (is it a cat?): one logit against a [B, 2] one-hot target in a hand-written binary cross-entropy,
broadcast, so every logit meets both targets and the loss is the same whatever the label (ln 2 at best)."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import MLP, classification_task


def encode(example):
    return {
        "index": example.index,
        "inputs": torch.from_numpy(example.fields["x"]),
        "label": int(example.fields["animal"] == "cat"),
    }


EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "The loss cannot fall"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"]}


def loss_sum(logits, batch):
    logit, target = logits.float(), F.one_hot(batch["labels"], 2).float()  # the bug: [B, 1] against [B, 2]
    return -(target * F.logsigmoid(logit) + (1 - target) * F.logsigmoid(-logit)).sum() / 2


def make_task():
    return classification_task(
        encode=encode,
        loss_sum=loss_sum,
        predict=lambda logits, b: (logits[:, 0] > 0).long(),
        class_names=["other", "cat"],
        raw_label=lambda e: "cat" if e.fields["animal"] == "cat" else "other",
        info={"num_classes": 2, "target_unit": "example"},
    )


def build_model(task):
    return MLP(classes=1)
