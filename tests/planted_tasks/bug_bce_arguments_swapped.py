"""binary classification with one logit whose loss_sum calls ``binary_cross_entropy_with_logits(labels, logits)``:
the arguments swapped, the labels read as logits and the logits as targets. The loss is then linear in each
logit, without a floor: training drives it below 0 for ever (an outside examination, 2026-12-06, whose
diagnosis blamed predict)."""

import torch.nn.functional as F

from tests.planted_tasks import ok_binary_one_logit as right
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "The loss went below 0"}
SETTINGS = EVERY_CHECK
__all__ = ["EXPECTED", "SETTINGS", "make_task", "build_model"]


def make_task():
    task = right.make_task()
    task.loss_sum = lambda logits, b: F.binary_cross_entropy_with_logits(
        b["labels"].float(), logits.squeeze(-1).float(), reduction="sum"
    )
    return task


def build_model(task):
    return right.Model()
