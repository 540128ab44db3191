"""Multi-label tagging whose loss is summed over examples but averaged over each example's 3 tags
(`bce(reduction='none').mean(1).sum()`) while target_count counts every tag: each tag's gradient is a third
of what the engine's normalisation means, a learning rate silently divided by 3 (an outside examination,
2026-12-05; its initial loss, 0.36 against ln 2, passed the +-50% comparison)."""

import torch.nn.functional as F

from tests.planted_tasks import ok_multilabel
from tests.planted_tasks.ok_multilabel import Model

EXPECTED = {"step": "objective", "verdict": "fail", "said": "loss_sum averages over each example's targets"}
__all__ = ["EXPECTED", "Model", "make_task"]


def make_task():
    task = ok_multilabel.make_task()
    task.loss_sum = lambda logits, b: (
        F.binary_cross_entropy_with_logits(logits.float(), b["labels"], reduction="none").mean(1).sum()
    )
    return task
