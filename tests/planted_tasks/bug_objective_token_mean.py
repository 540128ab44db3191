"""a generation loss_sum that averages over the batch's tokens: long and short answers weigh alike per batch."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "objective", "verdict": "fail"}


def loss_sum(logits, batch):
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        batch["labels"][:, 1:].reshape(-1),
        ignore_index=IGNORE_INDEX,
    )  # the bug: mean


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
