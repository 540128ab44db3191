"""tagging: loss_sum reshapes logits [B,T,C] to [B,C,T] with .view (not .permute/.transpose) for
cross_entropy's (N,C,d) layout: classes and positions are scrambled."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = {"step": "alignment", "verdict": "fail"}


def loss_sum(logits, batch):
    b, t, c = logits.shape
    return F.cross_entropy(logits.float().view(b, c, t), batch["labels"], ignore_index=IGNORE_INDEX, reduction="sum")


def make_task():
    return tagging_task(loss_sum=loss_sum)


def build_model(task):
    return Tagger()
