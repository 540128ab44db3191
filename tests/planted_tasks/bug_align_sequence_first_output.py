"""tagger: the encoder runs sequence-first (no batch_first), so the output is [T, B, C]; loss_sum flattens it
as if it were [B, T, C] against batch-major labels (predict transposes it right)."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = {"step": "alignment", "verdict": "fail", "said": "the output is sequence-first"}


def loss_sum(logits, batch):  # the bug: logits are [T, B, C]
    flat = logits.float().reshape(-1, logits.shape[-1])
    return F.cross_entropy(flat, batch["labels"].reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum")


def make_task():
    return tagging_task(loss_sum=loss_sum, predict=lambda logits, batch: logits.transpose(0, 1).argmax(dim=-1))


class Model(Tagger):
    def forward(self, input_ids, attention_mask):
        return super().forward(input_ids, attention_mask).transpose(0, 1)  # [T, B, C]: sequence-first


def build_model(task):
    return Model()
