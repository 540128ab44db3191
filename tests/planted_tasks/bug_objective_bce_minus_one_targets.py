"""binary labels kept as -1/+1 (SVM-style data) and fed straight to BCE-with-logits, which takes 0/1: the -1
rows' loss falls without end as their logit falls, and a predict thresholding at 0 still gets the sign right,
so every other check passed (an outside examination)."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, vector_examples
from tests.planted_tasks.ok_binary_one_logit import Model

EXPECTED = {"step": "objective", "verdict": "fail", "said": "loss_sum has no floor"}
__all__ = ["Model", "make_task"]


def make_task():
    examples = vector_examples()
    return classification_task(
        examples=examples,
        kind="binary",
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "label": 1.0 if e.fields["animal"] == "cat" else -1.0,  # the bug: -1, not 0
        },
        loss_sum=lambda logits, b: F.binary_cross_entropy_with_logits(
            logits.squeeze(-1).float(), b["labels"].float(), reduction="sum"
        ),
        predict=lambda logits, b: (logits.squeeze(-1) > 0).float() * 2 - 1,
        class_names=None,
        raw_label=None,
        info={"target_unit": "example"},
    )
