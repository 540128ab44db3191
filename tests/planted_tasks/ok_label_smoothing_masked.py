"""correct: instruction tuning with hand-written label smoothing, BOTH terms masked to the counted
positions (labels != -100) and summed (control for x4_bug_ls_on_ignored)."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None
EPS = 0.1


def loss_sum(logits, batch):
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    labels = batch["labels"][:, 1:]
    keep = labels != IGNORE_INDEX
    nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    smooth = -logp.mean(dim=-1)
    return (((1 - EPS) * nll + EPS * smooth) * keep).sum()


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
