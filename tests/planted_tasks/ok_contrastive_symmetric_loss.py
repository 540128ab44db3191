"""correct: the dual encoder of ok_contrastive_in_batch trained with CLIP's symmetric loss, the mean of the
query->document and document->query cross-entropies over the [B, B] scores (the second reads the columns).
The objective check cut each example's row out of the scores and called the loss on it, which crashed
(cross_entropy of a [B, 1] column against one label): a crash is a fail (an outside examination's task)."""

import torch.nn.functional as F

from tests.planted_tasks.ok_contrastive_in_batch import DualEncoder
from tests.planted_tasks.ok_contrastive_in_batch import make_task as in_batch

EXPECTED = None


def symmetric(logits, b):
    logits = logits.float()
    return 0.5 * (
        F.cross_entropy(logits, b["labels"], reduction="sum") + F.cross_entropy(logits.T, b["labels"], reduction="sum")
    )


def make_task():
    task = in_batch()
    task.loss_sum = symmetric
    return task


def build_model(task):
    return DualEncoder()
