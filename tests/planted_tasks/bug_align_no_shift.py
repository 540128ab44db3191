"""labels aligned with the inputs and a loss_sum that does not shift: each position learns to copy itself."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {"step": "alignment", "verdict": "fail"}


def loss_sum(logits, batch):  # the bug: no shift
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        batch["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def make_task():
    return lm_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
