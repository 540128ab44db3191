"""The loss's mask is the attention mask shifted one position too far (``attention_mask[:, 2:]`` where the
labels are ``[:, 1:]``), and target_count counts the same positions: the last real token of every row,
its <eos>, is never trained, while the labels (-100 on padding) and expected_targets say it is a target.
The row checks read the labels; only the loss's own gradient shows what it skips."""

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "declared target token(s) not counted in the loss"}


def _kept(batch):
    mask = batch["attention_mask"].long()
    kept = torch.zeros_like(batch["labels"][:, 1:])
    kept[:, :-1] = mask[:, 2:]  # the bug: mask[:, 1:] lines up with the labels
    return kept * (batch["labels"][:, 1:] != IGNORE_INDEX)


def loss_sum(logits, batch):
    per_token = F.cross_entropy(
        logits[:, :-1].transpose(1, 2).float(), batch["labels"][:, 1:].clamp(min=0), reduction="none"
    )
    return (per_token * _kept(batch)).sum()


def target_count(batch):
    return _kept(batch).sum()


def make_task():
    return lm_task(loss_sum=loss_sum, target_count=target_count)


def build_model(task):
    return tiny_gpt(task)
