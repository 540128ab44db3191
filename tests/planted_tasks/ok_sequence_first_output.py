"""correct: a tagger whose output is sequence-first, [T, B, C], and whose loss_sum and predict transpose it
to the labels' [B, T] first."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._text_tasks import tagging_task
from tests.planted_tasks.bug_align_sequence_first_output import Model

EXPECTED = None


def loss_sum(logits, batch):
    flat = logits.transpose(0, 1).float().reshape(-1, logits.shape[-1])
    return F.cross_entropy(flat, batch["labels"].reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum")


def make_task():
    return tagging_task(loss_sum=loss_sum, predict=lambda logits, batch: logits.transpose(0, 1).argmax(dim=-1))


def build_model(task):
    return Model()
