"""correct: instruction tuning with PaLM's auxiliary z-loss: shifted CE summed over the counted tokens plus
1e-4 * logsumexp(logits)^2 on the SAME counted positions (keeps the softmax normaliser near 0)."""

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None
Z = 1e-4


def loss_sum(logits, batch):
    logits = logits[:, :-1].float()
    labels = batch["labels"][:, 1:]
    keep = labels != IGNORE_INDEX
    ce = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
    )
    z = torch.logsumexp(logits, dim=-1)[keep]
    return ce + Z * (z**2).sum()


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
