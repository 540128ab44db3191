"""correct: sentence classification, LEFT-padded batches, BERT encoder + head on each row's FIRST REAL token (the
<s>), found from the attention mask (argmax of the mask); position_ids = cumsum(mask) - 1 so real tokens are numbered
from 0 as when alone."""

import torch

from tests.planted_tasks import _left_padded_cls as _leftcls

EXPECTED = None


def first_real(hidden, mask):
    col = mask.argmax(dim=1)
    return hidden[torch.arange(hidden.shape[0]), col]


def make_task():
    return _leftcls.task()


def build_model(task):
    return _leftcls.Pooled(first_real)
