"""character tagger whose loss keeps only labels > 0 (a mask meant for -100 padding written as labels > 0):
every 'consonant' (tag 0) is left out of the loss, so that class is never trained."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import tiny_gpt
from tests.planted_tasks._text_tasks import tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "every label 'consonant' (0) is left out"}


def loss_sum(logits, batch):
    kept = batch["labels"] > 0
    return F.cross_entropy(logits[kept].float(), batch["labels"][kept], ignore_index=IGNORE_INDEX, reduction="sum")


def make_task():
    return tagging_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
